"""Would a document the asker may not read have answered? (For the people handling escalations only.)

When a question escalates because nothing the asker may read is close enough (`below_score_floor`)
or they may read nothing at all (`no_eligible_source`), the same search runs once more over every
published document of the asker's tenant. If its best passage passes the floor and belongs to a
document none of the asker's groups may read, the knowledge base has no gap: access does. The
escalation then records those passages, marked `restricted`, so the weekly digest counts it apart
from knowledge-base gaps and its owner's channel gets the thread. Nothing of them is ever shown to
the asker: the search result goes to the escalation row, never to the conversation.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from graph.state import PassageSummary, passage_summary, passage_to_state
from retrieval.search import Searcher
from store.records import Scope

log = logging.getLogger(__name__)

# (question, asker's scope) → passages of documents the asker may not read that would have answered
RestrictedCheck = Callable[[str, Scope], Awaitable[list[PassageSummary]]]
# The reasons a document beyond the asker's reach can explain.
RESTRICTABLE = ("below_score_floor", "no_eligible_source")


def restricted_passages(searcher: Searcher) -> RestrictedCheck:
    async def check(question: str, scope: Scope) -> list[PassageSummary]:
        try:
            documents = await searcher.catalog.list_documents(tenant_id=scope.tenant_id, include_withdrawn=False)
            active = [d for d in documents if d.status == "active" and d.current_version]
            hidden = {d.doc_id for d in active if not set(d.groups) & scope.groups}
            if not hidden:
                return []
            wide = Scope(user_id=scope.user_id, tenant_id=scope.tenant_id,
                         groups=frozenset(g for d in active for g in d.groups), audience=scope.audience)
            result = await searcher.search(question, wide)
        except Exception:  # the check only informs the people handling it; the escalation goes on
            log.exception("could not check for restricted documents")
            return []
        if result.gate is not None or not result.passages or result.passages[0].doc_id not in hidden:
            return []
        return [{**passage_summary(passage_to_state(p)), "restricted": True}  # type: ignore[typeddict-item]
                for p in result.passages if p.doc_id in hidden and p.score >= result.min_score]

    return check
