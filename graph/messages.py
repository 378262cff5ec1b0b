"""Fixed texts the user sees when Cairn does not answer from the documents, in English and Arabic.

These are the only words Cairn says on its own: abstentions (one per escalation reason), the replies
to conversation (a greeting, thanks, "what can you do?"), the notes that say what became of a message
while a person is looking at an earlier question, how a human answer is attributed, and how a closed
or expired escalation ends. None of them states a policy fact, so none needs a citation.
"""

from __future__ import annotations

from retrieval.language import detect_language

DEFAULT_LANGUAGE = "en"
LANGUAGES = ("en", "ar")

REASONS = ("retrieval_unavailable", "no_eligible_source", "below_score_floor", "answer_validation_failed", "user_requested_human",
           "conflicting_sources", "internal_error")

_ABSTENTIONS: dict[str, dict[str, str]] = {
    "retrieval_unavailable": {
        "en": "I can't search our policies right now, so I won't guess. I've passed your question to a person, "
              "who will reply here.",
        "ar": "لا أستطيع البحث في سياساتنا الآن، لذلك لن أخمّن الإجابة. لقد أحلت سؤالك إلى أحد الموظفين، "
              "وسيرد عليك هنا.",
    },
    "retrieval_paused": {  # retrieval_unavailable because an operator paused lookups
        "en": "Policy lookups are paused right now, so I can't answer this myself. I've passed your question "
              "to a person, who will reply here.",
        "ar": "البحث في السياسات متوقف مؤقتًا الآن، لذلك لا أستطيع الإجابة بنفسي. لقد أحلت سؤالك إلى أحد "
              "الموظفين، وسيرد عليك هنا.",
    },
    "no_eligible_source": {
        "en": "I don't have any approved documents to answer from yet, so I can't answer this myself. I've passed "
              "your question to a person, who will reply here.",
        "ar": "لا توجد لديّ بعد أي مستندات معتمدة أجيب منها، لذلك لا أستطيع الإجابة بنفسي. لقد أحلت سؤالك إلى أحد "
              "الموظفين، وسيرد عليك هنا.",
    },
    "below_score_floor": {
        "en": "I couldn't find this in our approved policies, so I won't guess. I've passed your question to "
              "a person, who will reply here.",
        "ar": "لم أجد إجابة لهذا السؤال في سياساتنا المعتمدة، لذلك لن أخمّن. لقد أحلت سؤالك إلى أحد الموظفين، "
              "وسيرد عليك هنا.",
    },
    "answer_validation_failed": {
        "en": "I couldn't put together an answer that I can fully back with our policies, so I've passed your "
              "question to a person, who will reply here.",
        "ar": "لم أتمكن من صياغة إجابة موثّقة بالكامل من سياساتنا، لذلك أحلت سؤالك إلى أحد الموظفين، "
              "وسيرد عليك هنا.",
    },
    "user_requested_human": {
        "en": "Sure. I've passed your question to a person, who will reply here.",
        "ar": "بالتأكيد. لقد أحلت سؤالك إلى أحد الموظفين، وسيرد عليك هنا.",
    },
    "conflicting_sources": {
        "en": "I found conflicting information in our policies. I need the owners to confirm which applies.",
        "ar": "وجدت معلومات متعارضة في سياساتنا. أحتاج إلى أن يؤكد أصحاب السياسات أيّها ينطبق.",
    },
    "internal_error": {
        "en": "Something went wrong while answering; your question has been passed to a person.",
        "ar": "حدث خطأ أثناء الإجابة؛ وقد أُحيل سؤالك إلى أحد الموظفين.",
    },
}

_FIXED: dict[str, dict[str, str]] = {
    "escalate_pending": {  # a follow-up about the open question: added to its thread
        "en": "A person is already looking at your question; I've added this message to it.",
        "ar": "يعمل أحد الموظفين على سؤالك بالفعل؛ وقد أضفت رسالتك هذه إليه.",
    },
    # a new message while a person is looking at an earlier question: what became of it
    "aside_answer": {
        "en": "(This is a new question, so I answered it on its own. A person is still looking at your earlier "
              "question and will reply here.)",
        "ar": "(هذا سؤال جديد، لذلك أجبت عنه وحده. ما زال أحد الموظفين يعمل على سؤالك السابق وسيرد عليك هنا.)",
    },
    "aside_escalate": {
        "en": "(This is a new question, so it has its own place in the queue. A person is still looking at your "
              "earlier question too.)",
        "ar": "(هذا سؤال جديد، لذلك أحلته وحده. وما زال أحد الموظفين يعمل على سؤالك السابق أيضًا.)",
    },
    "aside_conversation": {
        "en": "A person is still looking at your earlier question and will reply here.",
        "ar": "ما زال أحد الموظفين يعمل على سؤالك السابق وسيرد عليك هنا.",
    },
    # conversation, not a question (graph/intent.py): no search, no escalation
    "greeting": {
        "en": "Hi! I'm Cairn. I answer questions about our policies from the approved documents, and I show the "
              "document behind every answer. Ask me anything about them; to reach a person, say \"I want to "
              "talk to a person\".",
        "ar": "مرحبًا! أنا كايرن. أجيب عن الأسئلة المتعلقة بسياساتنا من المستندات المعتمدة، وأذكر المستند الذي "
              "تستند إليه كل إجابة. اسألني عنها، وإذا أردت التحدث مع شخص فقل \"أريد التحدث مع شخص\".",
    },
    "thanks": {
        "en": "You're welcome! Ask me anything else about our policies, or say \"I want to talk to a person\" "
              "to reach someone.",
        "ar": "على الرحب والسعة! اسألني أي شيء آخر عن سياساتنا، أو قل \"أريد التحدث مع شخص\" للتواصل مع أحد "
              "الموظفين.",
    },
    "acknowledgement": {
        "en": "👍 If anything else comes up, ask me about our policies, or say \"I want to talk to a person\" "
              "to reach someone.",
        "ar": "👍 إذا كان لديك سؤال آخر فاسألني عن سياساتنا، أو قل \"أريد التحدث مع شخص\" للتواصل مع أحد "
              "الموظفين.",
    },
    "capabilities": {
        "en": "I answer questions about our policies using only the approved documents, and I cite the document "
              "behind every sentence. When they don't answer "
              "your question, I pass it to a person, who replies here. You can also say \"I want to talk to a "
              "person\" at any time.",
        "ar": "أجيب عن الأسئلة المتعلقة بسياساتنا من المستندات المعتمدة فقط، وأذكر المستند الذي تستند إليه كل جملة. وإذا لم تجب المستندات عن سؤالك أحلته إلى أحد "
              "الموظفين ليرد عليك هنا. ويمكنك أيضًا أن تقول \"أريد التحدث مع شخص\" في أي وقت.",
    },
    "chase": {  # "any update?" with nothing open
        "en": "I'm here! You have no question waiting for a person right now. Ask me anything about our "
              "policies, or say \"I want to talk to a person\" to reach someone.",
        "ar": "أنا هنا! ليس لديك الآن سؤال بانتظار رد أحد الموظفين. اسألني أي شيء عن سياساتنا، أو قل \"أريد التحدث مع "
              "شخص\" للتواصل مع أحد الموظفين.",
    },
    "admin_answer": {
        "en": "Answer from {admin}: {text}",
        "ar": "إجابة من {admin}: {text}",
    },
    "resolve": {
        "en": "A person has closed your question without a written reply. You're welcome to ask again.",
        "ar": "أغلق أحد الموظفين سؤالك دون رد مكتوب. يمكنك طرح السؤال مرة أخرى.",
    },
    "expired": {
        "en": "Sorry, nobody was able to answer your question in time. Please ask again or contact the "
              "policy owner directly.",
        "ar": "عذرًا، لم يتمكن أحد من الرد على سؤالك في الوقت المحدد. يُرجى السؤال مرة أخرى أو التواصل "
              "مع مالك السياسة مباشرة.",
    },
}


def user_language(text: str, preferred: str | None = None) -> str:
    """The language to reply in: the caller's preference if we have it, else the question's script."""
    if preferred in LANGUAGES:
        return preferred  # type: ignore[return-value]
    return "ar" if detect_language(text) in ("ar", "mixed") else "en"


def abstention(reason: str, language: str) -> str:
    """The fixed reply for an escalation reason. Unknown reasons raise: every reason has wording."""
    if reason not in _ABSTENTIONS:
        raise ValueError(f"no abstention text for reason {reason!r}")
    texts = _ABSTENTIONS[reason]
    return texts.get(language, texts[DEFAULT_LANGUAGE])


def fixed(kind: str, language: str, **values: str) -> str:
    if kind not in _FIXED:
        raise ValueError(f"no fixed text {kind!r}")
    texts = _FIXED[kind]
    return texts.get(language, texts[DEFAULT_LANGUAGE]).format(**values)


def attributed_answer(*, admin: str, text: str, language: str) -> str:
    """An admin's reply as the user sees it: clearly a person's answer, not the bot's."""
    return fixed("admin_answer", language, admin=admin, text=text.strip())
