"""Does a message ask for a person? A table of what must and must not skip the documents."""

from __future__ import annotations

import pytest

from graph.intent import wants_human

ASKS_FOR_A_PERSON = [
    "I need someone from HR to call me, not a bot",
    "I need someone from HR to call me",
    "Can someone from payroll call me back?",
    "could somebody phone me about this please",
    "I'd like a real person to contact me",
    "I want HR to call me",
    "not a bot please, a human",
    "I want to talk to a person, please.",
    "talk to a human please",
    "connect me",
    "can you forward this to a person in HR",
    "please escalate this",
    "agent",
    "Can I speak with someone in HR?",
    "أريد التحدث مع شخص من فريق الموارد البشرية.",
    "أريد التحدث إلى شخص",
    "أبي موظف",
    "موظف",
    "أحتاج أحد من الموارد البشرية يتصل بي",
    "أريد شخصًا يكلمني، وليس روبوت",
    "لا أريد التحدث مع بوت",
    "can someone from the travel team dm me about my booking?",
    "could somebody from payroll message me",
    "need to talk to my hr business partner asap, its about a harassment issue",
    "I want to speak with my people partner",
    "ممكن أحد من الموارد البشرية يتصل فيني؟",
    "هل يمكن أن يتصل بي أحد من فريق السفر؟",
]

POLICY_QUESTIONS = [
    "Can a travel agent book my hotel?",
    "What is the hotel limit in London?",
    "Who is the person responsible for leave?",
    "Will HR call me about my parental leave?",
    "Can my manager call me while I'm on holiday?",
    "Who do I call if I lose my laptop?",
    "How do I call the IT helpdesk?",
    "Does the company pay for a real estate agent when I relocate?",
    "What does a person need to submit with an expense claim?",
    "Is there someone in HR who handles visas?",
    "Do I need to talk to HR before parental leave?",
    "Can I use a chatbot to draft customer emails?",
    "Is the robot vacuum in the office a personal expense?",
    "كم يوم إجازة يحصل عليها الموظف؟",
    "هل يحق للموظف إجازة حج؟",
    "من المسؤول عن الإجازات في الموارد البشرية؟",
    "هل يمكن استخدام روبوت محادثة عام مع بيانات العملاء؟",
    "Can my manager message me on holiday?",
    "Do I need to talk to my manager before booking leave?",
    "Should I email my manager a sick note?",
    "هل يتصل بي المدير أثناء الإجازة؟",
    "متى يتصل بي فريق الموارد البشرية بعد التقديم؟",
    "got a sketchy email that looks like it's from our CFO asking for gift cards. where do i forward it?",
    "Should I forward it to the security team or just delete it?",
]


@pytest.mark.parametrize("text", ASKS_FOR_A_PERSON)
def test_asks_for_a_person(text: str) -> None:
    assert wants_human(text)


@pytest.mark.parametrize("text", POLICY_QUESTIONS)
def test_policy_questions_are_not_requests_for_a_person(text: str) -> None:
    assert not wants_human(text)


async def test_the_hr_call_back_request_escalates_at_once_on_the_sample(open_home) -> None:
    from graph.messages import abstention
    from tests.graph.conftest import bob

    async with open_home() as svc:
        out = await svc.runner.ask(session_id="s-hr-call", scope=bob(svc),
                                   question="I need someone from HR to call me, not a bot")
    assert (out.route, out.reason) == ("escalate", "user_requested_human")
    assert out.answer == abstention("user_requested_human", "en")
    assert out.trace["path"] == ["agent", "tools", "force_escalate"]  # no search, no draft
