"""Which figure a question asks for, and whether a quote states one (graph/answerers/figures.py)."""

from __future__ import annotations

import pytest

from graph.answerers.figures import asked_figure, states_figure


@pytest.mark.parametrize(("question", "figure"), [
    ("How much can I spend on food each day?", "money"),
    ("how much did each profit sharing share pay out last March?", "money"),
    ("What's the annual maximum for the Dependent Care FSA for US employees?", "money"),
    ("whats the wellness allowance", "money"),
    ("What is the meals per diem in Riyadh?", "money"),
    ("How long is the probation period?", "duration"),
    ("how much notice do I have to give?", "duration"),
    ("How many weeks of paid parental leave do I get?", "duration"),
    ("whats the max severance the company pays out?", "money"),
    # not a figure of either kind, or not one these words can tell
    ("What is the maximum number of vacation days I can bank?", None),
    ("What is the maximum carry-over of vacation days?", None),
    ("What is the forklift speed limit inside the warehouse?", None),
    ("How much food can the larvae eat per day?", None),
    ("how long should my passwords be?", "size"),
    ("how long should passwords be under the acme guidelines?", "size"),
    ("spending the winter in lisbon. how long can i be away from my home office?", "duration"),
    ("out for surgery for a month. how much of acme's medical leave is paid?", "duration"),
    ("Do I need permission to take on a side job?", None),
    ("كم يبلغ بدل السكن؟", None),
])
def test_the_figure_a_question_asks_for(question: str, figure: str | None) -> None:
    assert asked_figure(question) == figure


@pytest.mark.parametrize(("sentence", "money", "duration"), [
    ("Meals are reimbursable up to $100 USD per day.", True, True),
    ("Employer matching up to 3% of base salary.", True, False),
    ("The second replacement costs USD 25, deducted from pay.", True, False),
    ("Tuition is covered in full.", True, False),
    ("… with a maximum of 4 months of severance pay.", True, True),
    ("You'll get 2 weeks' base salary for every year.", True, True),
    ("A one-time stipend of 1,000 PLN.", True, False),
    ("Claims must be submitted by 31 March.", False, True),
    ("Hotels are booked for up to 5 nights.", False, True),
    ("Co-working deposits will not be reimbursed.", True, False),
    ("You have ten (10) years from the date of grant to exercise.", False, True),
    ("We work in 6-week cycles.", False, True),
    ("Probation is normally three months.", False, True),
    ("We do not have a waiting period for Paid Parental Leave.", False, True),
    ("GitLab will continue to cover the majority of costs for your benefits package.", False, False),
    ("You'll accrue one share per month starting on your second anniversary.", False, False),
])
def test_a_sentence_states_a_figure_of_the_kind(sentence: str, money: bool, duration: bool) -> None:
    assert (states_figure("money", sentence), states_figure("duration", sentence)) == (money, duration)


def test_how_much_of_a_leave_asks_for_a_length_of_time() -> None:
    assert asked_figure("out for surgery ~6 wks. how much of my medical leave is paid?") == "duration"
    assert asked_figure("how much of the parental leave is paid at full salary?") == "duration"
    assert asked_figure("recovery may take 10 weeks. How much of a medical leave of absence is paid?") == "duration"
    assert asked_figure("how much does the company pay for my phone?") == "money"


def test_how_far_ahead_asks_for_a_length_of_time() -> None:
    assert asked_figure("how far ahead do I have to book an international flight?") == "duration"
    assert asked_figure("how far is the office from the station?") is None


def test_the_length_of_a_password_is_a_size_not_a_length_of_time() -> None:
    assert asked_figure("how long should my passwords be at acme?") == "size"
    assert asked_figure("whats the min password length?") == "size"
    assert asked_figure("how long does probation last?") == "duration"
    assert states_figure("size", "Do: create a password that is ideally 15 characters or longer")
    assert not states_figure("size", "Below is guidance for setting passwords to managed accounts.")
    assert not states_figure("size", "Passwords expire after 90 days.")


def test_a_plan_s_name_is_no_amount_of_money() -> None:
    assert not states_figure("money", "Medical: UnitedHealthcare HSA 1600")
    assert states_figure("money", "Per diem in Mexico: MXN 500")
    assert states_figure("money", "The allowance is 1,000 SEK a year.")


def test_the_company_match_is_an_amount() -> None:
    assert asked_figure("gitlab inc 401k - what's the company match?") == "money"
    assert asked_figure("whats the 401k match at acme") == "money"
    assert states_figure("money", "Company Match: 50% of contributions on the first 6% of earnings")
