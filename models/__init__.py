"""Learned parts: the MiniLM forward pass and the answer judge, with their shipped weights."""
