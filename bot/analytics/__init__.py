"""Escalation analytics: labels (kind + topic), expiry of unanswered escalations, the weekly digest."""
