"""The gate's distinguishing terms beyond "will you pay for …?" items (graph/coverage.py): a season
a rule is asked for, and the qualifiers of an Arabic question read over English evidence."""

from __future__ import annotations

from dataclasses import replace

from graph.coverage import find_gap
from graph.tenant_names import Lexicon
from tests.graph.test_coverage_items import passage

WORKING_TIME = passage("Full-time staff work 40 hours a week, Monday to Friday. Part of the week may be worked from "
                       "home with your manager's agreement.", "Working Time > Weekly Hours", doc="hr/working-time")
SUMMER_HOURS = passage("From June to August we work a 32-hour week: Friday afternoons are off for everyone.",
                       "Working Time > Summer Hours", doc="hr/working-time")
RETURNS = passage("Shoppers may return an unused item within 30 days with a receipt for a full refund.",
                  "Returns > Store Customers", doc="retail/returns")
WHOLESALE = passage("Wholesale customers may return unopened stock within 14 days for a credit note.",
                    "Returns > Wholesale Accounts", doc="retail/returns")
SICK = passage("Staff get 10 days of paid sick leave a year; from the fourth day a medical certificate is needed.",
               "Leave > Sick Leave", doc="hr/leave")


def test_a_season_the_evidence_never_names_is_missing() -> None:
    gap = find_gap("do we get shorter weeks in the summer?", [WORKING_TIME], min_score=0.3)
    assert gap is not None and gap.missing == ("summer",)
    gap = find_gap("Are the office hours different in winter?", [WORKING_TIME], min_score=0.3)
    assert gap is not None and gap.missing == ("winter",)


def test_a_season_the_evidence_names_passes() -> None:
    assert find_gap("how long is the working week in the summer?", [SUMMER_HOURS], min_score=0.3) is None
    # Without a season in the question the weekly-hours rule answers.
    assert find_gap("how many hours a week do full-time staff work?", [WORKING_TIME], min_score=0.3) is None


def test_an_arabic_question_s_qualifier_must_be_in_english_evidence() -> None:
    # "Do wholesale customers get a cash refund?" over the shoppers' returns rule.
    gap = find_gap("هل يحصل عملاء الجملة على استرداد نقدي؟", [RETURNS], min_score=0.3)
    assert gap is not None and gap.missing == ("wholesale",)
    # "Are interns entitled to paid sick leave?" over the staff sick-leave rule: interns are not named.
    gap = find_gap("هل يحق للمتدربين الحصول على إجازة مرضية مدفوعة؟", [SICK], min_score=0.3)
    assert gap is not None and gap.missing == ("intern",)


def test_an_arabic_question_whose_qualifiers_the_evidence_holds_passes() -> None:
    assert find_gap("كم مدة إرجاع المنتجات لعملاء الجملة؟", [WHOLESALE], min_score=0.3) is None
    # "How many days of sick leave do I get?": sick leave is what the passage is about.
    assert find_gap("كم يوما من الإجازة المرضية أحصل عليها؟", [SICK], min_score=0.3) is None


def test_a_kind_of_leave_the_evidence_never_names_is_missing() -> None:
    annual = passage("Full-time staff get 25 days of paid annual leave a year, booked with your manager.",
                     "Leave > Annual Leave", doc="hr/leave")
    gap = find_gap("how many days of paid leave do i get for my own wedding?", [annual], min_score=0.3)
    assert gap is not None and gap.missing == ("wedding",)
    marriage = passage("Staff get 3 days of paid leave for their marriage.", "Leave > Special Leave", doc="hr/leave")
    assert find_gap("how many days of paid leave do i get for my own wedding?", [marriage], min_score=0.3) is None


def test_a_site_the_evidence_never_names_is_missing_even_where_it_names_no_place() -> None:
    rooms = passage("Everyone books meeting rooms in the calendar; a room is held for 10 minutes.",
                    "Facilities > Meeting Rooms", doc="ops/facilities")
    gap = find_gap("How do I book a meeting room in the London office?", [rooms], min_score=0.3)
    assert gap is not None and gap.missing == ("London",)
    # A trip to London is not about a site there: a rule that names no place applies to it.
    assert find_gap("Can I book a meeting room for my trip to London?", [rooms], min_score=0.3) is None
    # A rule for every office, or one that names the city, covers it.
    every = passage("In all offices, meeting rooms are booked in the calendar.", "Facilities > Meeting Rooms",
                    doc="ops/facilities")
    assert find_gap("How do I book a meeting room in the London office?", [every], min_score=0.3) is None
    london = passage("In London, meeting rooms are booked at the front desk.", "Facilities > Meeting Rooms",
                     doc="ops/facilities")
    assert find_gap("How do I book a meeting room in the London office?", [london], min_score=0.3) is None


def test_a_passage_that_introduces_a_list_of_places_tells_places_apart() -> None:
    intro = passage("Below are states that have paid family leave programmes and in which we have employees. If you "
                    "work in one of the following states, you may qualify for leave.", "State Family Leave",
                    doc="hr/state-leave")
    gap = find_gap("I work from Washington state - what paid family leave can I get through the state program?",
                   [intro], min_score=0.3)
    assert gap is not None and gap.missing == ("Washington",)
    # A rule that names no place and lists none applies wherever the asker is.
    flights = passage("Flights over six hours may be booked in premium economy.", "Travel > Flights", doc="fin/travel")
    assert find_gap("can I fly premium economy from Washington to Tokyo?", [flights], min_score=0.3) is None


def test_an_arabic_question_s_site_must_be_named_by_english_evidence() -> None:
    wifi = passage("Guest Wi-Fi details are posted at reception; never share the staff network password.",
                   "IT > Wi-Fi", doc="it/wifi")
    # "What is the guest Wi-Fi password in the Denver office?": the evidence names no office.
    gap = find_gap("ما كلمة مرور شبكة الواي فاي للضيوف في مكتب دنفر؟", [wifi], min_score=0.3)
    assert gap is not None and gap.missing == ("denver",)
    denver = passage("In the Denver office the guest Wi-Fi password is on the card at reception.", "IT > Wi-Fi",
                     doc="it/wifi")
    assert find_gap("ما كلمة مرور شبكة الواي فاي للضيوف في مكتب دنفر؟", [denver], min_score=0.3) is None


def test_what_a_how_many_question_counts_must_be_in_the_evidence() -> None:
    passwords = passage("Passwords must be at least 15 characters long and are never written down.",
                        "Security > Passwords", doc="it/security")
    gap = find_gap("how many wrong password tries before my account is locked?", [passwords], min_score=0.3)
    assert gap is not None and gap.missing == ("tries",)
    assert find_gap("How many characters must a password have?", [passwords], min_score=0.3) is None
    # Units, people and times are how anything is counted: the rule's own words need not repeat them.
    assert find_gap("How many days of paid sick leave do staff get?", [SICK], min_score=0.3) is None
    assert find_gap("how many people can share one sick day?", [SICK], min_score=0.3) is None


def test_what_a_question_asks_the_policy_on_must_be_in_the_evidence() -> None:
    hours = passage("Staff work 40 hours a week and take a one-hour lunch break each day.", "Working Time > Breaks",
                    doc="hr/working-time")
    gap = find_gap("what's the policy on smoking or vaping breaks during the workday?", [hours], min_score=0.3)
    assert gap is not None and gap.missing == ("smoking or vaping",)
    smoking = passage("Smoking breaks are taken outside the building, away from the entrance; vaping counts as "
                      "smoking.", "Working Time > Breaks", doc="hr/working-time")
    assert find_gap("what's the policy on smoking or vaping breaks during the workday?", [smoking],
                    min_score=0.3) is None
    # Staff words count: dinners are meals.
    meals = passage("Client meals are reimbursed up to USD 60 a person with the attendees listed.",
                    "Expenses > Meals", doc="fin/expenses")
    assert find_gap("whats the policy on expensing client dinners?", [meals], min_score=0.3) is None


def test_whose_benefit_it_is_must_be_in_the_evidence_as_a_policy_names_them() -> None:
    classes = passage("To access the learning platform's membership and classes, sign in through the portal.",
                      "Learning > How to access the platform", doc="people/learning")
    gap = find_gap("can my partner use my learning platform membership too?", [classes], min_score=0.3)
    assert gap is not None and gap.missing == ("partner",)
    cover = passage("We cover 100% of your membership, and you can add family members with the company covering 66% "
                    "of their costs.", "Benefits > Private medical insurance", doc="people/benefits-uk")
    assert find_gap("If I add my husband and kids, how much of their cost is covered?", [cover], min_score=0.3) is None


def test_items_written_with_a_slash_are_alternatives() -> None:
    dental = passage("Dental insurance in the US is provided through the national insurer.", "Benefits > Health Insurance",
                     doc="people/benefits")
    gap = find_gap("Does the dental plan cover orthodontics / braces for my kid?", [dental], min_score=0.3)
    assert gap is not None and gap.missing == ("orthodontics or braces",)
    braces = passage("The dental plan covers braces for dependants under 19.", "Benefits > Dental", doc="people/benefits")
    assert find_gap("Does the dental plan cover orthodontics / braces for my kid?", [braces], min_score=0.3) is None


def test_childcare_is_what_policies_call_dependent_care() -> None:
    care = passage("Dependent care budget: the company provides up to $50 per day while you travel to a meetup.",
                   "Travel > Additional spending categories", doc="people/travel")
    assert find_gap("Can I get reimbursed for childcare while I'm away on a work trip?", [care], min_score=0.3) is None


def test_what_a_unit_counts_must_be_in_the_evidence() -> None:
    sick = passage("If sick leave lasts more than 8 days, report it to the absence team.", "Benefits NL > Sick Leave",
                   doc="people/benefits-nl")
    gap = find_gap("How many weeks of notice do I give when resigning?", [sick], min_score=0.3)
    assert gap is not None and "notice" in gap.missing
    vacation = passage("Staff take 25 vacation days a year.", "Time off > Vacation", doc="hr/time-off")
    assert find_gap("how many days of leave do I get?", [vacation], min_score=0.3) is None  # leave is vacation


def test_a_section_word_that_policies_state_as_a_figure_need_not_be_in_the_quote() -> None:
    # "Limits" heads a section of a passage found beside the one that answers; the answer states the
    # limit as a figure, not by name.
    gifts = passage("Gifts to customers must be under $50 USD and recorded in the gift log.",
                    "Customer Gifts > Sending Gifts", doc="legal/gifts")
    spending = replace(passage("Team events may cost up to $100 per person.", "Spending > Event Limits",
                               doc="finance/spending"), score=0.1)
    assert find_gap("is it ok to send a customer a coffee gift card? any limit?", [gifts, spending],
                    min_score=0.3) is None
    # A section word that names a thing still counts ("events" heads a section; the gifts rule lacks it).
    gap = find_gap("can I send a customer a gift card for team events?", [gifts, spending], min_score=0.3)
    assert gap is not None and gap.missing == ("events",)


def test_the_asker_s_circumstances_are_not_what_the_rule_is_for() -> None:
    travel_cover = passage("Emergency medical treatment abroad is covered up to $250,000 per occurrence.",
                           "Travel > Business travel insurance", doc="finance/travel")
    question = "if I get sick on a work trip overseas, how much does the travel insurance pay for emergency medical?"
    assert find_gap(question, [travel_cover], min_score=0.3) is None
    remote = passage("You may work from another country for up to 183 days a year before it counts as a relocation.",
                     "Remote Work > Working abroad", doc="hr/remote")
    assert find_gap("thinking of spending the winter in Lisbon. how long can I work abroad before it is a relocation?",
                    [remote], min_score=0.3) is None
    # The same words, when the rule is asked for, still count.
    gap = find_gap("if I get sick, do unused sick days carry over?", [WORKING_TIME], min_score=0.3)
    assert gap is not None and "sick" in gap.missing
    gap = find_gap("Are the office hours different in winter?", [WORKING_TIME], min_score=0.3)
    assert gap is not None and gap.missing == ("winter",)


def test_a_month_is_when_not_what() -> None:
    approval = passage("Time off of more than 10 business days needs your manager's approval in the HR system.",
                       "Time Off > Approval", doc="hr/time-off")
    december = replace(passage("Offices close from Dec 24 to Jan 1.", "Holidays > Dec closure", doc="hr/holidays"),
                       score=0.1)
    assert find_gap("taking 3 wks off over dec, do I need approval beyond telling my manager?", [approval, december],
                    min_score=0.3) is None


def test_a_name_in_a_sentence_that_does_not_ask_is_not_looked_for() -> None:
    fund = passage("Staff can be reimbursed up to $5,000 a year for approved courses and certifications.",
                   "Learning > Training budget", doc="hr/learning")
    cloud = replace(passage("Cloud certifications such as AWS and Azure count as approved courses.",
                            "Learning > Approved courses", doc="hr/learning-list"), score=0.1)
    assert find_gap("how much training money can I claim a year? want to do an AWS cert", [fund, cloud],
                    min_score=0.3) is None
    gap = find_gap("can I claim an AWS certification from the training money?", [fund, cloud], min_score=0.3)
    assert gap is not None and gap.missing == ("AWS",)


def test_a_word_of_the_same_root_covers_a_term_but_not_a_qualifier() -> None:
    pension = passage("The company will match what you contribute, up to 6% of your salary.",
                      "Benefits > Retirement Plan", doc="hr/benefits")
    other = replace(passage("Contributions are paid monthly.", "Pension > Contributions", doc="hr/pension-uk"),
                    score=0.1)
    assert find_gap("does the company match retirement contributions?", [pension, other], min_score=0.3) is None
    contracts = passage("Every contract is reviewed by Legal before signature.", "Legal > Contract review",
                        doc="legal/contracts")
    gap = find_gap("do contractors need legal review?", [contracts], min_score=0.3)
    assert gap is not None and gap.missing == ("contractors",)


def test_a_share_of_a_bill_is_read_as_the_bill_s_thing() -> None:
    internet = passage("Monthly internet service charges are reimbursable for staff who work from home.",
                       "Expenses > Home office", doc="finance/expenses")
    gap = find_gap("can I expense part of my electricity/heating bill?", [internet], min_score=0.3)
    assert gap is not None and gap.missing == ("electricity or heating bill",)


def test_an_employer_the_tenant_never_names_is_missing_however_it_is_spelt() -> None:
    vacation = passage("Staff take 25 vacation days a year.", "Time off > Vacation", doc="hr/time-off")
    words = frozenset({"staff", "take", "vacation", "days", "day", "year", "time", "off", "how", "many", "do", "get",
                       "new", "our", "remote", "employees", "at", "the", "people"})
    known = Lexicon(names={}, words=words)
    gap = find_gap("how many vacation days do shopify employees get", [vacation], min_score=0.3, lexicon=known)
    assert gap is not None and gap.missing == ("shopify",)
    gap = find_gap("how many vacation days do people at shopify get?", [vacation], min_score=0.3, lexicon=known)
    assert gap is not None and gap.missing == ("shopify",)
    # Staff the tenant's documents speak of are no employer.
    assert find_gap("how many vacation days do new employees get?", [vacation], min_score=0.3, lexicon=known) is None
    assert find_gap("how many vacation days do remote staff get?", [vacation], min_score=0.3, lexicon=known) is None


def test_a_dog_or_a_cat_is_a_pet() -> None:
    pets = passage("Bereavement leave of 3 days also applies to the loss of pets.", "Time Off > Bereavement",
                   doc="hr/time-off")
    assert find_gap("my dog died last night. can I take bereavement leave for that?", [pets], min_score=0.3) is None
    family = passage("Bereavement leave of 3 days applies to the loss of a family member.", "Time Off > Bereavement",
                     doc="hr/time-off")
    gap = find_gap("my dog died last night. can I take bereavement leave for that?", [family], min_score=0.3)
    assert gap is not None and gap.missing == ("dog",)


def test_a_part_time_course_is_no_part_time_employee() -> None:
    fund = passage("If you leave within twelve months of a reimbursement you must pay it back.",
                   "Learning > Payback", doc="hr/learning")
    assert find_gap("want to use the learning fund for a part-time masters course - would I pay it back if I leave?",
                    [fund], min_score=0.3) is None
    gap = find_gap("do part-time employees get the learning fund?", [fund], min_score=0.3)
    assert gap is not None and gap.missing == ("part-time",)


def test_the_year_someone_joined_is_their_situation() -> None:
    options = passage("Teammates who joined after May 2021 have ten (10) years to exercise vested options.",
                      "Equity > Exercise window", doc="hr/equity")
    assert find_gap("leaving next month, joined in 2022. how long do I have to exercise my options?", [options],
                    min_score=0.3) is None
    gap = find_gap("what was the exercise window for options granted in 2019?", [options], min_score=0.3)
    assert gap is not None and gap.missing == ("2019",)


def test_outside_the_us_covers_any_other_country() -> None:
    retirement = passage("Our retirement plan for US employees matches up to 6%. If you're outside the US, we match "
                         "what you contribute to a local plan up to the same share.", "Benefits > Retirement",
                         doc="hr/benefits")
    assert find_gap("I'm in canada, not on the US payroll. do I get a retirement match?", [retirement],
                    min_score=0.3) is None


def test_how_rough_a_figure_is_asked_is_no_part_of_the_thing() -> None:
    gifts = passage("Gifts from vendors must have a value under $50.", "Conduct > Gifts", doc="legal/gifts")
    assert find_gap("a vendor wants to send me a gift basket. what's the rough value limit for gifts?", [gifts],
                    min_score=0.3) is None


def test_to_retain_is_what_a_retention_policy_states() -> None:
    slack = passage("Direct messages have a retention period of 18 months.", "Slack > Retention", doc="it/slack")
    # "Retain" heads a section of another passage found: a section word the quote must hold.
    records = replace(passage("Retain\nKeep invoices for seven years.", "Finance > Records", doc="finance/records"),
                      score=0.2)
    assert find_gap("How long does the company retain Slack DMs?", [slack, records], min_score=0.3) is None


def test_more_of_the_asker_s_situation_is_not_looked_for() -> None:
    lodging = passage("If you stay with friends or family instead of a hotel, you may expense a gift of up to $50.",
                      "Travel > Lodging", doc="finance/travel")
    assert find_gap("staying at my aunt's place instead of a hotel - can i expense anything for that?", [lodging],
                    min_score=0.3) is None
    pto = passage("Time off exceeding 25 consecutive calendar days needs your director's approval.",
                  "Time Off > Extended leave", doc="hr/time-off")
    assert find_gap("Planning 5 weeks off in a row this summer. is there a point where I need extra sign-off?", [pto],
                    min_score=0.3) is None
    relocation = passage("Start the relocation process at least 3 months before the move.", "Relocation > Timing",
                         doc="hr/relocation")
    assert find_gap("I'm relocating from Germany to Portugal. How far ahead do I start the relocation process?",
                    [relocation], min_score=0.3) is None
    pets = passage("Pet care while you travel for an offsite is reimbursed up to $50 per day.", "Travel > Care",
                   doc="finance/travel")
    assert find_gap("my dog has to go to boarding during the offsite - can I get reimbursed for that?", [pets],
                    min_score=0.3) is None
    babysitting = passage("Dependent care while you travel for work is reimbursed up to $50 per day.",
                          "Travel > Dependents", doc="finance/travel")
    assert find_gap("can i get reimbursed for a babysitter while im away at the team offsite?", [babysitting],
                    min_score=0.3) is None  # a babysitter is dependent care
    banked = passage("Vacation rolls over year to year, with a maximum bank of 27 days.", "Benefits > Vacation",
                     doc="hr/benefits")
    assert find_gap("How many vacation days can I bank? is there a rollover max?", [banked], min_score=0.3) is None
    eyes = passage("Team members who use a screen get eye tests reimbursed up to GBP 25.", "Benefits > Eye care",
                   doc="hr/benefits")
    assert find_gap("do we get eye tests reimbursed because of screen work?", [eyes], min_score=0.3) is None
    # A place the rule is asked for still counts; so does a board.
    budgets = passage("Relocation budgets: Germany EUR 5,000; the Netherlands EUR 6,000.", "Relocation > Budgets",
                      doc="hr/relocation")
    gap = find_gap("I'm relocating from Germany to Portugal. What is the relocation budget in Portugal?", [budgets],
                   min_score=0.3)
    assert gap is not None and "Portugal" in gap.missing
    gap = find_gap("are board members paid for the offsite?", [pets], min_score=0.3)
    assert gap is not None and "board" in gap.missing


def test_how_long_is_no_name_though_the_passages_capitalise_long() -> None:
    enrol = passage("Enrol within 30 days of your start date or your cover is waived. Long-Term Disability and "
                    "Short-Term Disability are in the same Rippling flow. Long-Term Disability pays 60%.",
                    "Benefits > Enrolment", doc="hr/benefits")
    assert find_gap("just started. how long do I have to pick my health insurance before it gets waived?", [enrol],
                    min_score=0.3) is None


def test_the_dress_code_is_a_policy_on_dress() -> None:
    scope = passage("This policy also applies to interactions with customers, vendors and partners.",
                    "Respectful Workplace > Scope", doc="hr/conduct")
    gap = find_gap("what's the dress code for customer meetings?", [scope], min_score=0.3)
    assert gap is not None and gap.missing == ("dress",)


def test_parts_of_a_leave_are_its_segments() -> None:
    leave = passage("Parental leave may be taken in up to three segments within the first year.",
                    "Leave > Parental", doc="hr/leave")
    assert find_gap("can parental leave be split up? if so, into how many parts?", [leave], min_score=0.3) is None


def test_the_amount_asked_may_come_before_what_it_is_of() -> None:
    life = passage("We offer a $400,000 life insurance policy to all staff through MetLife.", "Benefits > Insurance",
                   doc="hr/benefits")
    gap = find_gap("What's the annual maximum benefit on the MetLife dental plan? Need a crown done", [life],
                   min_score=0.3)
    assert gap is not None and gap.missing == ("dental",)
    dental = passage("The dental plan pays up to $2,000 a year.", "Benefits > Dental", doc="hr/benefits")
    assert find_gap("What's the annual maximum benefit on the dental plan?", [dental], min_score=0.3) is None


def test_a_page_for_one_country_s_staff_tells_places_apart_though_its_text_never_names_the_country() -> None:
    on_call = passage("Engineers who cover a weekend on-call shift get 2 days time in lieu.",
                      "PTY LTD Benefits > On-call", doc="benefits/pty-benefits-australia")
    gap = find_gap("I'm based in London. How much time in lieu do I get for a weekend on-call shift?", [on_call],
                   min_score=0.3)
    assert gap is not None and "London" in gap.missing
    assert find_gap("I'm based in Melbourne. How much time in lieu do I get for a weekend on-call shift?", [on_call],
                    min_score=0.3) is None
