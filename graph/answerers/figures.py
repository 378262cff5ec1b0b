"""Which figure a question asks for, and whether a sentence states one of that kind.

"What's the annual maximum for the Dependent Care FSA?" asks for an amount of money; "how long is
the probation period?" for a length of time; "how long should my password be?" for a size (in
characters or words). A quote that states neither ("GitLab will continue to
cover the majority of costs", "You'll accrue one share per month") does not answer it, however
close its words are: the fact asked is missing from what would be shown, so the turn escalates
(graph/nodes/tools.py). Only English questions are read: the kinds of graph/answerers/features.py
cover Arabic for ranking, and a missed check here only leaves the turn as it was.
"""

from __future__ import annotations

import re
from typing import Literal

from graph.answerers.features import LEAD_TIME_ASKED, SIZE_ASKED, STATES_SIZE

Figure = Literal["money", "duration", "size"]
# How the trace names a figure that no quote states (`missing_terms`).
FIGURE_NAMES: dict[Figure, str] = {"money": "an amount of money", "duration": "a length of time",
                                   "size": "a length in characters or words"}

_TIME_THING = (r"(?:(?:paid|unpaid|medical|sick|parental|maternity|paternity|annual|bereavement|vacation|"
               r"holiday|notice|leave)\s+)*(?:leave|time|time off|pto|notice|vacation|holidays?|days?|weeks?|"
               r"months?|years?|hours?)")
# "how much of my medical leave is paid?" asks for a length of time, as "how much medical leave" does.
_OF_THE = r"(?:of\s+(?:the\s+|my\s+|your\s+|our\s+|a\s+|an\s+|[\w-]+(?:'s|’s|s')\s+)?)?"  # "of sourcegraph's"
_MONEY_WORD = (r"(?:cost|costs|pay|pays|paid|payout|spend|reimburs\w*|worth|budget|allowance|stipend|expense|"
               r"claim|cover|covers|contribut\w*|match|matches|charge|fee|price|salary|bonus|per diem|"
               r"dollars?|euros?|pounds?|money|cash|fsa|hsa|401k|pension|insurance)")
# "how much … cost / pay / reimburse …", "how much is a replacement badge?", "what's the allowance /
# stipend / per diem …", "what's the maximum I can expense …"; not "how much notice", "the maximum
# carry-over of vacation days", "the speed limit".
_MONEY = re.compile(
    rf"\bhow much\b(?!\s+{_OF_THE}{_TIME_THING}\b)(?=.*\b{_MONEY_WORD}\b)|"
    rf"\bhow much (?:is|are|was|will|would|does|do)\b(?!.*\b{_TIME_THING}\b)|"
    r"\bwhat(?:'s|’s|s| is| are)?\s+(?:the\s+|my\s+|our\s+)?(?:\w+\s+){0,3}?"
    r"(?:allowance|stipend|budget|per diem|reimbursement|price|fee|salary|payout|mileage rate|company match|"
    r"(?:401k|401\(k\)|pension|retirement) match|"
    rf"(?:max(?:imum)?|limit|cap)\b(?=.*\b{_MONEY_WORD}\b)(?!.*\b{_TIME_THING}\b))\b",
    re.IGNORECASE)
_DURATION = re.compile(rf"\bhow many\s+(?:\w+\s+)?(?:minutes|hours|days|weeks|months|years)\b|"
                       # (the length of a thing, "how long should my passwords be?", is a size: SIZE_ASKED,
                       # which `asked_figure` reads first)
                       r"\bhow long\b(?!.*\bbe\W*$)(?!.*\bcharacters?\b)|"
                       rf"\bhow much\s+{_OF_THE}{_TIME_THING}\b", re.IGNORECASE)

_UNIT = r"(?:minutes?|hours?|hrs?|days?|nights?|weeks?|wks?|months?|years?|yrs?|quarters?|semesters?)"
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
          r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_SOME = (r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|"
         r"sixty|ninety|a|an|half an?|a few|several|many|multiple)")
_STATES_DURATION = re.compile(
    rf"\d[\d.,]*\)?[\s-]*(?:(?:-|–|to|or)\s*\d[\d.,]*[\s-]*)?(?:[\w()-]+[ -]){{0,2}}?{_UNIT}\b|\b{_SOME}[ -](?:\w+[ -])?{_UNIT}\b|"
    r"\b(?:unlimited|indefinite\w*|(?:no|not have an?|without an?) (?:set |fixed )?(?:limit|maximum|cap|end date|"
    r"waiting period|minimum tenure)|"
    r"end of (?:the )?(?:day|week|month|quarter|year)|annual\w*|monthly|weekly|daily|yearly|fortnight\w*|"
    r"same day|immediately|day one|day 1)\b|"
    # a deadline answers "how long do I have …?" ("by 31 March", "before December 1st")
    rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b|\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b",
    re.IGNORECASE)
# Currency codes as policies write them ("MXN 500", "1,000 SEK"); not any three capitals ("HSA 1600" is a plan).
_CURRENCY = (r"(?:USD|EUR|GBP|AUD|CAD|SAR|AED|INR|JPY|CHF|SGD|NZD|BRL|PLN|MXN|ZAR|SEK|NOK|DKK|ILS|KRW|CNY|HKD|PHP|"
             r"THB|IDR|MYR|TRY|CZK|HUF|RON|BGN|NGN|KES|EGP|ARS|CLP|COP|PEN|UAH|QAR|KWD|BHD|OMR|RUB|TWD|VND|PKR)")
_STATES_MONEY = re.compile(
    rf"[$€£¥₹]\s?\d|\b(?:usd|eur|gbp|aud|cad|sar|aed|inr|jpy|chf|sgd|nzd|brl|pln)\s?\d|(?-i:\b{_CURRENCY}\s?\d)|"
    r"\d[\d,.]*k?\s?(?:usd|eur|gbp|aud|cad|sar|aed|inr|jpy|chf|sgd|nzd|dollars|euros|pounds|yen|rupees)\b|"
    rf"(?-i:\d[\d,.]*k?\s?{_CURRENCY}\b)|\d\s?(?:%|percent\b|per cent\b)|"
    # pay counted in time ("a maximum of 4 months of severance pay", "2 weeks' salary")
    r"\b(?:\d+|one|two|three|four|five|six|eight|ten|twelve)\s+(?:weeks?|months?|years?)(?:'|’|’s|'s)?\s+(?:of\s+)?"
    r"(?:\w+\s+)?(?:pay|salary|wages|compensation|severance)\b|"
    r"\b(?:in full|full (?:cost|amount|price)|fully|free|no (?:cost|charge|limit|cap|maximum)|unlimited|"
    r"not (?:be )?(?:covered|reimbursed|reimbursable|paid|eligible)|(?:does|do|will|would) not (?:cover|reimburse|pay)|"
    r"won't|cannot|can't|at cost|market rate|local equivalent)\b",
    re.IGNORECASE)


def asked_figure(question: str) -> Figure | None:
    """The kind of figure an English question asks for: "size" (how long a password should be, how
    many characters), "duration" (how long, how many days, how much leave), "money" (how much does it
    cost or pay, what is the allowance or maximum), or None."""
    if not question.isascii():
        return None
    if SIZE_ASKED.search(question):
        return "size"
    if _DURATION.search(question) or LEAD_TIME_ASKED.search(question):  # "how far ahead …", "how much notice …"
        return "duration"
    if _MONEY.search(question):
        return "money"
    return None


def states_figure(figure: Figure, sentence: str) -> bool:
    """Whether a sentence states a figure of that kind (or says there is none: "unlimited", "no
    waiting period", "not covered"): "up to $700 per month", "15%", "in full"; "90 days", "ten (10)
    years", "three months"."""
    pattern = {"money": _STATES_MONEY, "duration": _STATES_DURATION, "size": STATES_SIZE}[figure]
    return bool(pattern.search(sentence))
