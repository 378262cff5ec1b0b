"""What a candidate sentence offers a question, beyond embedding similarity.

Cosine similarity alone prefers the sentence that *restates* the question ("If you fall ill during
annual leave and have a medical certificate …" for "from which day do I need a medical
certificate?"). These cheap, deterministic features push the choice towards the sentence that
*answers* it:

- **term weight**: question terms a sentence contains, each weighted by how rare it is among the
  candidate sentences (a word every sentence shares tells them apart least; "Finance" in "MFA for
  people in Finance" tells them apart most). Place names count through their aliases ("Riyadh" is
  "Saudi Arabia", "UK" is "United Kingdom"), and the passage heading counts for half ("Sick Leave").
- **answer kind**: "how many / how much / which day" wants a quantity, "when / until / by when" a
  date or period, "who" a person or team, "can I / do I need" a rule; a sentence of the wrong kind
  loses, one of the right kind gains (a date or a year is not a quantity: "effective July 27, 2023"
  does not say how much).
- **amount range**: a question that states an amount ("who approves a $3,000 request?") prefers the
  tier whose range holds it ("$1,000.01 - $5,000") to the tiers that exclude it; one that states a
  span of time ("let go after less than a year") the threshold that holds it ("for less than 1 year").
- **history**: a sentence that describes a superseded or not-yet-effective value ("which set a
  rate of USD 0.58 from 1 January 2025", "From 1 July 2027 …") is never the current answer.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from datetime import date

from graph.facts import ARABIC_DIGITS, NUMBER_UNITS
from retrieval.currencies import CODE as CURRENCY_CODES
from retrieval.currencies import CURRENCY
from retrieval.currencies import POST_WORDS as CURRENCY_WORDS
from retrieval.currencies import SYMBOLS as CURRENCY_SYMBOLS
from retrieval.language import normalise_arabic

_TOKEN = re.compile(r"\w+")
_COMPOUND = re.compile(r"\b[^\W\d_]+(?:-[^\W\d_]+)+\b")
_ARABIC_DIACRITICS = re.compile(r"[\u064B-\u0652\u0670\u0640]")
STOP = frozenset(
    "the a an of to in on for and or is are be what which who how many much do does did i my me we our "
    "you your can could may should will would with at by from this that it as if there when where per "
    "any some get have has am im i'm its it's was were been being about into than then them they their "
    "so just also please hey hi thanks quick one".split()) | frozenset(
    "في من على إلى الى عن ما هل كم هو هي أن ان التي الذي مع".split())

# Place names and the names documents use for them: a question about Riyadh is answered by the
# sentence about Saudi Arabia, one about the UK by the sentence about the United Kingdom.
_PLACES: dict[str, tuple[str, ...]] = {
    "united states": ("us", "usa", "u.s", "america", "american", "boston", "new york", "san francisco", "chicago",
                      "seattle", "los angeles", "austin", "denver", "washington"),
    "united kingdom": ("uk", "u.k", "britain", "great britain", "british", "england", "scotland", "wales",
                       "london", "manchester", "edinburgh"),
    "united arab emirates": ("uae", "emirates", "emirati", "dubai", "abu dhabi"),
    "saudi arabia": ("ksa", "saudi", "riyadh", "jeddah", "dammam"),
    "germany": ("german", "berlin", "munich", "frankfurt"),
    "france": ("french", "paris"),
    "netherlands": ("dutch", "holland", "amsterdam"),
    "canada": ("canadian", "toronto", "vancouver", "montreal"),
    "australia": ("australian", "sydney", "melbourne"),
    "india": ("indian", "bangalore", "bengaluru", "mumbai", "delhi"),
    "japan": ("japanese", "tokyo"),
    "ireland": ("irish", "dublin"),
    "spain": ("spanish", "madrid", "barcelona"),
    "qatar": ("doha",),
    "egypt": ("cairo", "egyptian"),
}
# Every other country by its English name alone (a demonym such as "Portuguese" also names a
# language; words such as Chad, Jordan, Georgia or Turkey are too often something else).
for _country in (
        "afghanistan|albania|algeria|andorra|angola|argentina|armenia|austria|azerbaijan|bahamas|bahrain|"
        "bangladesh|barbados|belarus|belgium|belize|benin|bhutan|bolivia|bosnia|botswana|brazil|brunei|bulgaria|"
        "burundi|cambodia|cameroon|chile|china|colombia|croatia|cuba|cyprus|czechia|denmark|djibouti|ecuador|"
        "el salvador|estonia|eswatini|ethiopia|fiji|finland|gabon|gambia|ghana|greece|guatemala|haiti|honduras|"
        "hong kong|hungary|iceland|indonesia|iran|iraq|israel|italy|jamaica|kazakhstan|kenya|kosovo|kuwait|"
        "kyrgyzstan|laos|latvia|lebanon|lesotho|liberia|libya|liechtenstein|lithuania|luxembourg|madagascar|"
        "malawi|malaysia|maldives|malta|mauritius|mexico|moldova|monaco|mongolia|montenegro|morocco|mozambique|"
        "myanmar|namibia|nepal|new zealand|nicaragua|nigeria|north macedonia|norway|oman|pakistan|panama|"
        "paraguay|peru|philippines|poland|portugal|puerto rico|romania|russia|rwanda|senegal|serbia|singapore|"
        "slovakia|slovenia|somalia|south africa|south korea|sri lanka|sudan|sweden|switzerland|syria|taiwan|"
        "tajikistan|tanzania|thailand|tunisia|uganda|ukraine|uruguay|uzbekistan|venezuela|vietnam|yemen|zambia|"
        "zimbabwe").split("|"):
    _PLACES.setdefault(_country, ())
_PLACES["czechia"] += ("czech republic",)
_PLACES["south korea"] += ("korea",)
# A US state is a place within the United States, as a city is ("I'm based in Texas").
_US_STATES = ("alabama|alaska|arizona|arkansas|california|colorado|connecticut|delaware|florida|hawaii|idaho|"
              "illinois|indiana|iowa|kansas|kentucky|louisiana|maine|maryland|massachusetts|michigan|minnesota|"
              "mississippi|missouri|montana|nebraska|nevada|new hampshire|new jersey|new mexico|north carolina|"
              "north dakota|ohio|oklahoma|oregon|pennsylvania|rhode island|south carolina|south dakota|tennessee|"
              "texas|utah|vermont|virginia|west virginia|wisconsin|wyoming").split("|")
_PLACES["united states"] += tuple(_US_STATES)
_CITIES = frozenset((
    "boston|new york|san francisco|chicago|seattle|los angeles|austin|denver|washington|london|manchester|"
    "edinburgh|dubai|abu dhabi|riyadh|jeddah|dammam|berlin|munich|frankfurt|paris|amsterdam|toronto|vancouver|"
    "montreal|sydney|melbourne|bangalore|bengaluru|mumbai|delhi|tokyo|dublin|madrid|barcelona|doha|cairo").split("|")
    + _US_STATES)
_ALIAS: dict[str, str] = {}
for _country, _names in _PLACES.items():
    for _name in (_country, *_names):
        _ALIAS[_name] = _country
_ALIAS_BY_FIRST: dict[str, list[str]] = {}
for _name in _ALIAS:
    _ALIAS_BY_FIRST.setdefault(_name.split(" ")[0], []).append(_name)
# The same places written in Arabic, each for its English name above ("دبي" is Dubai, a city).
_ARABIC_PLACES: dict[str, tuple[str, ...]] = {
    "united states": ("الولايات المتحدة", "أمريكا"),
    "boston": ("بوسطن",), "new york": ("نيويورك",), "san francisco": ("سان فرانسيسكو",), "chicago": ("شيكاغو",),
    "seattle": ("سياتل",), "los angeles": ("لوس أنجلوس", "لوس أنجلس"), "austin": ("أوستن",), "denver": ("دنفر",),
    "washington": ("واشنطن",),
    "united kingdom": ("المملكة المتحدة", "بريطانيا", "إنجلترا", "إنكلترا", "اسكتلندا", "ويلز"),
    "london": ("لندن",), "manchester": ("مانشستر",), "edinburgh": ("إدنبرة",),
    "united arab emirates": ("الإمارات",), "dubai": ("دبي",), "abu dhabi": ("أبوظبي", "أبو ظبي"),
    "saudi arabia": ("السعودية",), "riyadh": ("الرياض",), "jeddah": ("جدة",), "dammam": ("الدمام",),
    "germany": ("ألمانيا",), "berlin": ("برلين",), "munich": ("ميونخ",), "frankfurt": ("فرانكفورت",),
    "france": ("فرنسا",), "paris": ("باريس",), "netherlands": ("هولندا",), "amsterdam": ("أمستردام",),
    "canada": ("كندا",), "toronto": ("تورنتو",), "vancouver": ("فانكوفر",), "montreal": ("مونتريال",),
    "australia": ("أستراليا",), "sydney": ("سيدني",), "melbourne": ("ملبورن",),
    "india": ("الهند",), "bangalore": ("بنغالور",), "mumbai": ("مومباي",), "delhi": ("دلهي",),
    "japan": ("اليابان",), "tokyo": ("طوكيو",), "ireland": ("أيرلندا",), "dublin": ("دبلن",),
    "spain": ("إسبانيا",), "madrid": ("مدريد",), "barcelona": ("برشلونة",),
    "qatar": ("قطر",), "doha": ("الدوحة",), "egypt": ("مصر",), "cairo": ("القاهرة",),
}


def _arabic_place_pattern(name: str) -> str:
    """An Arabic place name as a sentence writes it: with a conjunction or preposition in front
    ("وفي دبي", "بالرياض", "للسعودية"), never inside another word."""
    words = [normalise_arabic(w) for w in name.split()]
    first = words[0]
    heads = [f"(?:[وف]?[بلك]?){re.escape(first)}"]
    if first.startswith("ال"):
        heads.append(f"[وف]?لل{re.escape(first[2:])}")
    return (r"(?<![^\W\d_])(?:" + "|".join(heads) + ")" + "".join(r"\s+" + re.escape(w) for w in words[1:])
            + r"(?![^\W\d_])")


_ARABIC_PLACE = [(english, re.compile(_arabic_place_pattern(n)))
                 for english, names in _ARABIC_PLACES.items() for n in names]

# The Arabic forms are written on the text as `answer_kind` normalises it (see `_ARABIC_FORMS`: one alef,
# ha for ta marbuta, no diacritics). Arabic words take prefixes ("وكم", "بكم"), never suffixes here:
# a bare "كم" would be found inside "المحكمة".
_AR = r"(?<![^\W\d_])(?:[وف]|[وف]?ب)?"  # start of an Arabic word, with its conjunction or preposition
_QUANTITY = re.compile(
    r"\b(?:how (?:many|much|long|far|soon|often|high|big|old)|what(?: is| are|'s|’s|s) the (?:\w+ ){0,3}"
    r"(?:limit|rate|allowance|amount|max|maximum|minimum|cap|budget|per diem|stipend|discount|fee|cost|price|"
    r"match)s?|"
    r"which day|what (?:percentage|amount|sum|share)|how many days|"
    # a threshold: "at what point do I need approval?" ("… if it exceeds 15 hours")
    r"at what (?:point|stage|threshold|level)|(?:above|over|beyond|past) what)\b|"
    rf"{_AR}كم\b|{_AR}ما (?:هو |هي )?(?:ال)?(?:حد|مبلغ|بدل|نسبه|قيمه|مقدار|عدد|سعر|تكلفه|كلفه|مده|ميزانيه|"
    r"اقصي|ادني|اطول|اقصر|اكبر|اصغر|اعلي)\b|(?:من|في|بعد) اي يوم\b|الي اي حد\b",
    re.IGNORECASE)
_HOW_OFTEN = re.compile(r"\bhow often\b|\bhow frequently\b|\bhow many times\b|"
                        rf"{_AR}كم (?:من )?(?:مره|المرات)\b|{_AR}كل كم\b|{_AR}ما (?:مدي |عدد )?(?:تكرار|مرات)\b|"
                        r"باي (?:تكرار|وتيره)\b", re.IGNORECASE)
# "How far ahead do I book flights?", "how much notice …", "how many days in advance …": how long before
# something must be done, which a sentence states with its figure and "in advance", "before", "notice".
LEAD_TIME_ASKED = re.compile(r"\bhow (?:far|long|much time|many (?:\w+ )?(?:days|weeks|months)|early|soon) "
                            r"(?:ahead|in advance|beforehand|before(?:hand)? (?:i|we|you)|prior)\b|"
                            r"\bhow far out\b|\bhow much (?:advance )?notice\b", re.IGNORECASE)
# "how long should my password be?", "what's the minimum password length?", "how many characters …": a
# size, which a sentence states in characters or words.
SIZE_ASKED = re.compile(r"\bhow long\s+(?:should|must|can|could|do|does)\s+(?!(?:i|we|you|they|he|she)\b)"
                        r"(?:(?:my|the|a|an|our|your)\s+)?(?:[\w-]+\s+){0,2}?be\b|"
                        r"\b(?:password|passphrase|pin|passcode)\s+length\b|\blength of (?:my |the |a )?(?:password|passphrase|pin)\b|"
                        r"\bhow many (?:characters|chars|digits|letters|words)\b", re.IGNORECASE)
STATES_SIZE = re.compile(r"\b(?:\d+|one|two|three|four|five|six|eight|ten|twelve|fifteen|twenty)\+?\s*(?:-\s*)?"
                         r"(?:characters?|chars?|digits?|letters?|words?)\b", re.IGNORECASE)
_AHEAD = re.compile(r"\b(?:in advance|ahead|before|prior|beforehand|notice|lead time)\b", re.IGNORECASE)
_FREQUENCY = re.compile(r"\b(?:every|each|per|a|an)\s+(?:\w+\s)?(?:day|week|month|quarter|year|fiscal|calendar|"
                        r"business|working)|\b(?:daily|weekly|fortnightly|monthly|quarterly|annually|yearly|"
                        r"biannually|once|twice)\b|(?:\d+\s*|\b(?:two|three|four|five|six|ten|several|many)\s+)"
                        r"(?:times|x)\b|كل|مرة|مرتين|سنويًا|شهريًا",  # not "at random times"
                        re.IGNORECASE)
# "When" asks when before a verb ("when is …", "when do I …"); "… gift when you hit 5 years" is a clause.
_WHEN = re.compile(r"\bwhen (?:is|are|was|were|do|does|did|can|could|should|will|would|must|may|might|shall|has|have)\b|"
                   r"^\W*when\W*$|\b(?:until when|by when|since when|what date|what time|which date|deadline|how soon|"
                   r"(?:opening|office|core|working|business) hours)\b|"
                   rf"{_AR}(?:حتي |قبل |منذ )?متي\b|{_AR}(?:ال)?(?:ساعات|موعد|مواعيد|مهله)\b|"
                   r"(?:في|خلال) اي (?:عام|سنه|عقد|قرن|شهر|تاريخ|وقت|فتره)\b|ما (?:هو |هي )?(?:ال)?تاريخ\b",
                   re.IGNORECASE)
# "Who do I email …?", "what's the email for …", "which address / channel do I …": an address answers.
_WHICH_ADDRESS = re.compile(r"\bwho (?:do|should|can|must) (?:i|we) (?:e-?mail|message|ping|slack)\b|"
                            r"\bwhat(?:'s|’s| is|s)? (?:the )?(?:e-?mail(?: address)?|address|alias|slack channel|"
                            r"channel)\b(?! policy)|\bwhich (?:e-?mail(?: address)?|address|alias|slack channel|channel)\b|"
                            r"\bwhere (?:do|should|can) (?:i|we) (?:e-?mail|send|forward|report) (?:it|this|that|them)\b",
                            re.IGNORECASE)
_ADDRESS = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+|(?<!\w)#[a-z][\w-]+", re.IGNORECASE)
# Arabic "من" is "who" only before a verb or a pronoun ("من يوافق", "من هو"); "من أي" is "from which".
_WHO = re.compile(r"^\W*(?:who|whom|which (?:team|person|manager|department))\b|\bwho (?:has|must|should|can|"
                  r"approves?|signs?)\b|"
                  r"^\W*[وف]?(?:من|لمن|بمن|الي من|مع من) (?!اي\b|اين\b|اجل\b|بين\b|خلال\b|قبل\b|بعد\b)"
                  r"(?:هو|هي|هم|الذي|التي|الذين|كان|كانت|يكون|المسؤول|(?!ال)[يتا]\w{2,})|"
                  r"(?<![^\W\d_])اي (?:فريق|قسم|شخص|مدير|جهه|اداره|موظف)\b", re.IGNORECASE)
_RULE = re.compile(r"^\W*(?:can|may|could|am|is|are|do|does|must|should|will)\b|\b(?:allowed|permitted|"
                   r"ok(?:ay)? to|eligible|entitled)\b|"
                   r"^\W*[وف]?(?:هل|ايمكن|يمكنني|يمكنك|استطيع|يحق لي|يجوز|مسموح|يسمح)", re.IGNORECASE)
# Arabic spelt one way for the patterns above: no diacritics or tatweel, one alef, ha for ta marbuta,
# ya for alef maqsura.
_ARABIC_FORMS = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ة": "ه", "ى": "ي"})
_DIGIT = re.compile(r"[\d\u0660-\u0669]")
# A number in words counts when it counts something ("two keys", "twice a year"), not in "our four offices".
_NUMBER_WORD = re.compile(r"\b(?:(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty|thirty|"
                          r"half an?|a few)\s+(?:\w+\s)?(?:days?|weeks?|months?|years?|hours?|minutes?|times?|"
                          r"nights?|keys?|bags?|returns?|items?|percent|per)|once|twice|first|second|third|fourth|"
                          r"fifth)\b", re.IGNORECASE)
_MONTHS = ("january february march april may june july august september october november december "
           "monday tuesday wednesday thursday friday saturday sunday")
_CALENDAR = re.compile(r"\b(?:" + "|".join(_MONTHS.split()) + r")\b", re.IGNORECASE)
# A date or a year in a sentence: "July 27, 2023", "1 March 2026", "2025-01-01", "in 2024", "(2023)".
_MONTH = "(?:" + "|".join(_MONTHS.split()) + ")"
_DATE_FIGURE = re.compile(
    rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}(?:,?\s+(?:19|20)\d\d)?\b|"  # 1 March 2026, 1st March
    rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+(?:19|20)\d\d\b)?|"  # July 27, 2023
    rf"\b{_MONTH},?\s+(?:19|20)\d\d\b|\b(?:19|20)\d\d-\d\d-\d\d\b|"  # March 2026, 2025-01-01
    r"\b(?:in|since|from|until|till|by|before|after|of|as of|effective|starting)\s+(?:19|20)\d\d\b|\((?:19|20)\d\d\)",
    re.IGNORECASE)
_DATEISH = re.compile(r"\b(?:before|after|within|by|until|days?|weeks?|"
                      r"months?|years?|hours?|immediately|straight away|same day|next)\b|يوم|أيام|شهر|أسبوع|قبل|بعد|خلال",
                      re.IGNORECASE)
_ROLE = re.compile(r"\b(?:manager|director|team|lead|officer|department|desk|vp|vice president|hr|people team|"
                   r"finance|it|owner|supervisor|approver|ceo|coo|cfo|head of)\b|مدير|فريق|إدارة|قسم", re.IGNORECASE)
_MODAL = re.compile(r"\b(?:must|may|can|cannot|can't|not|no|never|only|required?|allowed|permitted|eligible|"
                    r"entitled|need|needs|covered|reimbursed|reimbursable)\b|يجب|يجوز|يحق|لا|يُسمح|يسمح|فقط",
                    re.IGNORECASE)
# A sentence that tells the history of a value rather than the value in force.
_HISTORY = re.compile(r"\b(?:supersedes?|superseded|replaces|replaced the|previous(?:ly)?|formerly|old rate|"
                      r"no longer|used to be|which set|was set|had been|prior rate|former)\b|"
                      r"يلغي|السابق|سابقًا|سابقا", re.IGNORECASE)
_FROM_DATE = re.compile(r"\b(?:from|starting|effective|as of|with effect from|beginning)\s+(?:on\s+)?"
                        r"(\d{1,2})\s+(" + "|".join(_MONTHS.split()[:12]) + r")\s+(\d{4})", re.IGNORECASE)

# A sentence that sends the reader elsewhere ("Visit our Anniversary Gift section for more
# information") names the topic without stating anything of it.
_POINTER = re.compile(r"^\W*(?:please\s+)?(?:visit|see|refer to|check(?: out)?|read|go to|head to|take a look at|"
                      r"look at|find)\b.{0,120}?\b(?:for (?:(?:more|further|additional|full) )?(?:information|details|info)|"
                      r"to (?:learn|find out|read) more)\b", re.IGNORECASE)
_POINTS_ON = re.compile(r"\bfor (?:more|further|additional|full) (?:information|details|info)\W*$", re.IGNORECASE)
_AMOUNT_STATED = re.compile(r"[$€£¥₹%]|\b\d[\d,.]*\s*(?:days?|weeks?|months?|years?|hours?|percent)\b", re.IGNORECASE)
TYPE_BONUS = 0.10
TYPE_PENALTY = 0.15
HISTORY_PENALTY = 0.25
POINTER_PENALTY = 0.25


def tokens(text: str) -> set[str]:
    """Content words, lower-cased, without accents ("Beyoncé" = "beyonce") or Arabic diacritics,
    the Arabic article dropped and English lightly stemmed. A hyphenated word also counts written
    as one ("co-working" is "coworking" too, "e-bike" "ebike")."""
    return set(_tokens(text))


# A turn reads the same passages in the tools node's gate, the conflict check and the answerer.
@functools.lru_cache(maxsize=8192)
def _tokens(text: str) -> frozenset[str]:
    out = set()
    folded = _fold(text)
    for token in [*_TOKEN.findall(folded), *(m.replace("-", "") for m in _COMPOUND.findall(folded))]:
        if token.startswith("ال") and len(token) > 4:
            token = token[2:]
        token = stem(token)
        if token not in STOP and (len(token) > 2 or token.isdigit()):
            out.add(token)
    return frozenset(out)


def question_terms(question: str) -> set[str]:
    """The terms a question is compared with candidate sentences on (see `tokens`): its own words, its
    Arabic-Indic digits as the pages write them, and the places an Arabic question names as the
    English pages name them (no word list translates the rest: the multilingual reading compares it)."""
    return set(_question_terms(question))


@functools.lru_cache(maxsize=4096)
def _question_terms(question: str) -> frozenset[str]:
    if question.isascii():
        return _tokens(question)
    # Arabic-Indic digits as the English pages write them ("٢٥ يومًا" asks about "25 days").
    # A question's places count as the English page names them ("لندن" is London).
    return _tokens(question.translate(ARABIC_DIGITS)) | _tokens(question) | _arabic_places(question)


def _arabic_places(text: str) -> frozenset[str]:
    """The places an Arabic text names, as `places(…, widen=True)` gives them for English text."""
    return frozenset().union(*arabic_places(text).values())


def arabic_places(text: str) -> dict[str, frozenset[str]]:
    """Each place an Arabic text names, by its English name, with its terms as `places(…, widen=True)`
    gives them for English text ("دبي" is Dubai: the city and the United Arab Emirates)."""
    arabic = normalise_arabic(text)
    out: dict[str, frozenset[str]] = {}
    for name in sorted({name for name, pattern in _ARABIC_PLACE if pattern.search(arabic)}):
        if name in _CITIES:
            out[name] = frozenset({f"city:{name}", f"country:{_ALIAS[name]}"})
        else:
            out[name] = frozenset({f"country:{_ALIAS[name]}"})
    return out


def _fold(text: str) -> str:
    text = _ARABIC_DIACRITICS.sub("", text.lower())
    if text.isascii():
        return text
    # Latin letters only: decomposing Arabic would split a hamza from its alef.
    return _LATIN_NON_ASCII.sub(_without_accents, text)


_LATIN_NON_ASCII = re.compile(r"[\u0080-\u036f]+")


def _without_accents(m: re.Match[str]) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", m.group()) if not unicodedata.combining(c))


# "Yearly" is what "per year" says: a rate read by its unit.
_PER_UNIT = {"hourly": "hour", "daily": "day", "nightly": "night", "weekly": "week", "monthly": "month",
             "quarterly": "quarter", "yearly": "year"}


@functools.lru_cache(maxsize=65536)
def stem(token: str) -> str:
    """Just enough English stemming for overlap: units/unit, days/day, taxes/tax, executives/executive,
    booking/book."""
    if not token.isascii():
        return token
    if token in _PER_UNIT:
        return _PER_UNIT[token]
    for suffix in ("'s", "ies", "es", "s", "ing", "ed"):
        if not token.endswith(suffix) or len(token) - len(suffix) < 3:
            continue
        if suffix == "es" and not token[:-2].endswith(("s", "x", "z", "ch", "sh")):
            continue  # "executives" is "executive" + s, "taxes" is "tax" + es
        if suffix == "s" and token.endswith("ss"):
            return token  # "business", "access"
        return token[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return token


def places(text: str, *, widen: bool = False) -> set[str]:
    """The places a text names: a country by any of its names ("UK", "Britain"), a city by its own
    name. With `widen`, a city also stands for its country: a question about Riyadh is answered by
    the sentence about Saudi Arabia, but a sentence about Boston says nothing about Denver."""
    return set(_places(text, widen))


@functools.lru_cache(maxsize=8192)
def _places(text: str, widen: bool) -> frozenset[str]:
    low = " " + re.sub(r"[^\w. ]", " ", text.lower()) + " "
    # Only the names whose first word the text has can stand in it between spaces.
    words = set(low.split(" "))
    words |= {w[:-1] for w in words if w.endswith(".")}
    out: set[str] = set()
    # Longest names first, each taken out of the text once found: "New Mexico" is not Mexico too.
    for name in sorted((n for first in words & _ALIAS_BY_FIRST.keys() for n in _ALIAS_BY_FIRST[first]),
                       key=lambda n: (-len(n), n)):
        if f" {name} " in low or f" {name}. " in low:
            low = low.replace(f" {name} ", "  ").replace(f" {name}. ", "  ")
            is_city = name in _CITIES
            out.add(f"city:{name}" if is_city else f"country:{_ALIAS[name]}")
            if is_city and widen:
                out.add(f"country:{_ALIAS[name]}")
    return frozenset(out)


_INNER_CAPITAL = re.compile(r"(?<=[\w,] )[A-Z][\w-]+")


def capitalised(question: str) -> list[str]:
    """Capitalised words inside the question, not its first word (places, teams, products)."""
    return _INNER_CAPITAL.findall(question)


def names(question: str) -> set[str]:
    """The question's capitalised words as overlap tokens."""
    return {t for w in capitalised(question) for t in tokens(w)}


# A chatty message tells the asker's situation around what it asks ("single parent here and the company
# offsite is in sept. does sourcegraph help pay for childcare while im away?"): its parts, split at
# sentence ends, at a dash between words, and at a comma before a question word.
_PART_BREAK = re.compile(r"(?<=[.?!])\s+|\s+[-–—]\s+|(?<=[,;:])\s+(?=(?:how|what|whats|what's|when|where|who|"
                         r"which|can|could|do|does|is|are|am|should|will|would)\b)", re.IGNORECASE)
_ASKS = re.compile(r"^\W*(?:(?:and|or|also|plus|but)\s+)?(?:how|what|whats|what's|when|where|who|which|can|could|"
                   r"do|does|is|are|am|should|will|would)\b", re.IGNORECASE)
_ACRONYM = re.compile(r"\b[A-Z]{2,4}\b")
SELF_CONTAINED_TERMS = 4  # words an asking part needs to say what its "it" or "them" is ("… or can i keep them?")
_BACK_REFERENCE = re.compile(r"\b(?:it|that|this|these|those|them)\b", re.IGNORECASE)  # "is *that* enough?"


def asking_part(question: str) -> str | None:
    """The parts of a message that ask, with those that name a place, a company or a plan ("just joined
    GitLab Ltd in manchester.") and the one an asking part points back to ("my therapist wrote me a note,
    is *that* enough …?"); None when every part is kept or none asks."""
    parts = [p for p in _PART_BREAK.split(question.strip()) if p.strip()]
    if len(parts) < 2:
        return None
    asks = [p.rstrip().endswith("?") or bool(_ASKS.match(p)) for p in parts]
    keep = [a or bool(places(p, widen=True) or names(p) or _ACRONYM.search(p)) for p, a in zip(parts, asks, strict=True)]
    for i in range(1, len(parts)):  # a short question about "it" is about what the part before says
        if asks[i] and _BACK_REFERENCE.search(parts[i]) and len(question_terms(parts[i])) < SELF_CONTAINED_TERMS:
            keep[i - 1] = True
    if not any(asks) or all(keep):
        return None
    return " ".join(p for p, k in zip(parts, keep, strict=True) if k)


def answer_kind(question: str) -> str | None:
    """What kind of sentence answers the question: address (an email or a channel), size (in
    characters or words), quantity, frequency, lead time, when, who, rule, or None."""
    if not question.isascii():
        question = _ARABIC_DIACRITICS.sub("", question).translate(_ARABIC_FORMS)
    if _WHICH_ADDRESS.search(question):
        return "address"
    if _WHO.search(question):
        return "who"
    if SIZE_ASKED.search(question):
        return "size"
    if _HOW_OFTEN.search(question):
        return "frequency"
    if LEAD_TIME_ASKED.search(question):
        return "lead time"
    if _QUANTITY.search(question):
        return "quantity"
    if _WHEN.search(question):
        return "when"
    if _RULE.search(question):
        return "rule"
    return None


def kind_score(kind: str | None, sentence: str, *, question: str = "") -> float:
    """How well a sentence is of the kind asked. A figure the question itself gives is no answer
    ("how many sick days in a rolling *12*-month period?" is not answered by "Eligibility is calculated
    on a rolling 12-month period"), nor is a phone number an amount or a date."""
    if kind in ("quantity", "frequency", "when"):
        sentence = _PHONE.sub(" ", _without_figures_of(question, sentence) if question else sentence)
    if kind == "quantity":  # a date says when, not how much ("effective July 27, 2023")
        counted = _DATE_FIGURE.sub(" ", sentence)
        return TYPE_BONUS if _DIGIT.search(counted) or _NUMBER_WORD.search(counted) else -TYPE_PENALTY
    if kind == "lead time":  # "at least 21 days in advance", "two weeks' notice"; not "flights over 8 hours"
        counted = _DATE_FIGURE.sub(" ", sentence)
        return TYPE_BONUS if _AHEAD.search(sentence) and (_DIGIT.search(counted) or _NUMBER_WORD.search(counted)) \
            else -TYPE_PENALTY
    if kind == "frequency":  # "each fiscal quarter", "twice a year", "every 90 days"
        return TYPE_BONUS if _FREQUENCY.search(sentence) else -TYPE_PENALTY
    if kind == "when":  # a date, a time or a period: digits or named days; "within", "before" say less;
        # an amount of money or a share says how much, not when ("… $10,000 worth of reimbursements")
        if _DIGIT.search(_PERCENT_FIGURE.sub(" ", _ASKED_AMOUNT.sub(" ", sentence))) or _CALENDAR.search(sentence):
            return TYPE_BONUS
        return 0.0 if _DATEISH.search(sentence) else -TYPE_PENALTY
    if kind == "size":  # "ideally 15 characters or longer"
        return TYPE_BONUS if STATES_SIZE.search(sentence) else -TYPE_PENALTY
    if kind == "address":  # "panic@gitlab.com", "#security-help"
        return TYPE_BONUS if _ADDRESS.search(sentence) else -TYPE_PENALTY
    if kind == "who":
        return TYPE_BONUS if _ROLE.search(sentence) else 0.0
    if kind == "rule":
        return TYPE_BONUS / 2 if _MODAL.search(sentence) else 0.0
    return 0.0


_PHONE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?\(?\d{1,4}\)?(?:[ .-]\d{2,4}){2,3}|"
                    r"(?:1[-.])?(?:\(\d{3}\)\s?|\d{3}[-.])\d{3}[-.]\d{4})(?![\w-])")
_BARE_FIGURE = re.compile(r"\d+(?:[.,]\d+)*")


def _without_figures_of(question: str, sentence: str) -> str:
    """The sentence without the figures the question gives (as whole numbers: "12" in "12-month",
    not in "120")."""
    figures = set(_BARE_FIGURE.findall(question.translate(ARABIC_DIGITS)))
    for figure in figures:
        sentence = re.sub(rf"(?<![\d.,]){re.escape(figure)}(?![\d]|[.,]\d)", " ", sentence)
    return sentence


# Amounts of money: "$3,000", "USD 250", "1,000.01 EUR", "3k", in the currencies of
# retrieval/currencies.py (the one list). A bare number ("up to 3 days", "1-800-724") is no amount; in a
# range one side's currency is enough ("1,000.01 - $5,000").
_CODE = rf"(?:{CURRENCY_CODES}|{CURRENCY_WORDS})"
_SYMBOL = "|".join(re.escape(symbol) for symbol in sorted(CURRENCY_SYMBOLS, key=len, reverse=True))
_NUM = r"\d[\d,]*(?:\.\d+)?k?"
_MARKED = rf"(?:(?:{_SYMBOL})\s?{_NUM}|\b{_CODE}\s?{_NUM}|{_NUM}\s?{_CODE}\b)"
_EITHER = rf"(?:{_MARKED}|{_NUM})"
_ASKED_AMOUNT = re.compile(_MARKED, re.IGNORECASE)
_RANGE = re.compile(rf"(?:\bbetween\s+)?({_EITHER})\s*(?:-|–|—|\bto\b|\band\b)\s*({_EITHER})", re.IGNORECASE)
_UPPER = re.compile(rf"\b(?:up to|under|less than|below|not more than|no more than|at most|maximum of)\s+({_MARKED})",
                    re.IGNORECASE)
_LOWER = re.compile(rf"\b(?:over|above|more than|exceeding|greater than|at least|from)\s+({_MARKED})|({_MARKED})\s*"
                    r"(?:\+|or more|and (?:above|over|up))", re.IGNORECASE)
_PERCENT_FIGURE = re.compile(r"\d[\d.,]*\s?(?:%|percent\b|per cent\b)", re.IGNORECASE)
_CURRENCY_MARK = CURRENCY
RANGE_BONUS = 0.10
RANGE_PENALTY = 0.15


def _amount(text: str) -> float | None:
    digits = re.sub(r"[^\d.k]", "", re.sub(_CODE, "", text.lower()))
    scale = 1000.0 if digits.endswith("k") else 1.0
    try:
        return float(digits.rstrip("k")) * scale
    except ValueError:
        return None


def asked_amount(question: str) -> float | None:
    """The one amount of money a question states ("who approves a $3,000 request?"), or None."""
    found = {_amount(m) for m in _ASKED_AMOUNT.findall(question)}
    found.discard(None)
    return next(iter(found)) if len(found) == 1 else None


def range_fit(amount: float | None, sentence: str) -> float:
    """How a sentence's amount ranges suit the amount asked about: a range or threshold that holds it
    gains ("$1,000.01 - $5,000" for $3,000); a sentence whose every range is a tier of both bounds
    and excludes it loses ("$5,000.01 - $10,000"). A threshold that excludes it still answers ("a
    receipt for anything over $75" for a $50 lunch: none needed), and a sentence without ranges, or
    a question without an amount, is neither."""
    if amount is None:
        return 0.0
    tiers: list[tuple[float, float]] = []
    for low, high in _RANGE.findall(sentence):
        if not _CURRENCY_MARK.search(low + high):
            continue
        lo, hi = _amount(low), _amount(high)
        if lo is not None and hi is not None and lo < hi:
            tiers.append((lo, hi))
    thresholds = [(0.0, hi) for hi in map(_amount, _UPPER.findall(sentence)) if hi is not None]
    thresholds += [(lo, math.inf) for lo in (_amount(a or b) for a, b in _LOWER.findall(sentence)) if lo is not None]
    if any(lo <= amount <= hi for lo, hi in tiers + thresholds):
        return RANGE_BONUS
    return -RANGE_PENALTY if tiers and not thresholds else 0.0


# A span of time a question states as its case ("after less than a year", "a three-week holiday",
# "for 6 months", "a 12-hour flight") and the thresholds and tiers a sentence states ("over 1 year",
# "for less than 1 year", "more than 10 business days", "6 hours or more"), in days.
_SPAN_UNIT = {"hour": 1 / 24, "day": 1.0, "night": 1.0, "business day": 1.4, "working day": 1.4, "week": 7.0,
              "month": 30.0, "year": 365.0, "hr": 1 / 24, "wk": 7.0, "mo": 30.0, "mth": 30.0, "yr": 365.0}
_SPAN_NUMBER = r"(\d+(?:\.\d+)?|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_SPAN_UNITS = r"(hour|hr|day|night|business day|working day|week|wk|month|mth|mo|year|yr)s?"  # as staff write them too
_ABOUT = r"(?:~\s*|about\s+|around\s+|roughly\s+|approximately\s+|approx\.?\s+|nearly\s+|almost\s+)?"
_ASKED_SPAN = re.compile(rf"\b(?:(less than|under|fewer than|more than|over|longer than|before (?:my |the |a )?)|"
                         r"after|for|within|of)\s*"
                         rf"{_ABOUT}{_SPAN_NUMBER}\s+{_SPAN_UNITS}\b|\b{_SPAN_NUMBER}-{_SPAN_UNITS}\b|"
                         rf"\b{_SPAN_NUMBER}\s+{_SPAN_UNITS}\s+(?:after|into|later|off|away|ago)\b|"
                         rf"\b{_SPAN_NUMBER}[\s-]{_SPAN_UNITS}-long\b", re.IGNORECASE)
# "exceeding 25 consecutive calendar days": a word or two between the number and its unit
_SPAN_BOUND = re.compile(rf"\b(less than|under|fewer than|up to|at most|no more than|more than|over|longer than|"
                         rf"exceeds?|exceeding|at least)\s+{_SPAN_NUMBER}\s+(?:(?:consecutive|calendar|full|"
                         rf"continuous|straight)\s+){{0,2}}{_SPAN_UNITS}\b|"
                         rf"\b{_SPAN_NUMBER}\s+{_SPAN_UNITS}\s+(or more|or longer|or less|or fewer)\b", re.IGNORECASE)
_BELOW = ("less than", "under", "fewer than", "up to", "at most", "no more than", "or less", "or fewer")


def _span_days(number: str, unit: str) -> float:
    n = 1.0 if number.lower() in ("a", "an") else float(NUMBER_UNITS.get(number.lower(), number))
    return n * _SPAN_UNIT[unit.lower()]


Span = tuple[float, bool]  # days, and whether it was counted in hours (a flight, a shift)


def asked_span(question: str) -> Span | None:
    """The one span of time a question states as its case, in days ("less than a year" is just under
    365), or None."""
    found: set[Span] = set()
    for m in _ASKED_SPAN.finditer(question):
        comparison = m[1]  # "8 months after I joined", "a 6-month contract", "for less than a year"
        number, unit = next((m[i], m[i + 1]) for i in (2, 4, 6, 8) if m[i])
        days = _span_days(number, unit)
        if comparison:
            days *= 0.99 if comparison.lower().startswith(("less than", "under", "fewer than", "before")) else 1.01
        found.add((days, unit.lower() in ("hour", "hr")))
    return next(iter(found)) if len(found) == 1 else None


def span_fit(span: Span | None, sentence: str, *, tiered: bool = False) -> float:
    """RANGE_BONUS for a sentence whose threshold, counted in the same kind of unit, holds the span
    asked about ("for less than 1 year, 4 weeks of pay" when let go after less than a year). One whose
    thresholds all exclude it loses RANGE_PENALTY when `tiered` (another sentence of its passage holds
    the span: "for over 1 year, 2 weeks per year" is the other tier), else nothing: a lone threshold
    on the other side still says what does not apply."""
    return _span_fit(_span_holds(span, sentence), tiered)


def span_fits(span: Span | None, sentences: Sequence[str], groups: Sequence[int]) -> list[float]:
    """`span_fit` of each sentence, tiered where another sentence of its group (its passage) holds
    the span; each sentence's thresholds read once."""
    holds = [_span_holds(span, sentence) for sentence in sentences]
    tiered = {group for group, held in zip(groups, holds, strict=True) if held}
    return [_span_fit(held, group in tiered) for group, held in zip(groups, holds, strict=True)]


def _span_fit(holds: bool | None, tiered: bool) -> float:
    if holds:
        return RANGE_BONUS
    return -RANGE_PENALTY if tiered and holds is False else 0.0


def _span_holds(span: Span | None, sentence: str) -> bool | None:
    """Whether one of the sentence's thresholds in the span's kind of unit holds it; None without one."""
    if span is None:
        return None
    asked, in_hours = span
    holds: bool | None = None
    for m in _SPAN_BOUND.finditer(sentence):
        word, number, unit = (m[1], m[2], m[3]) if m[2] else (m[6], m[4], m[5])
        if (unit.lower() in ("hour", "hr")) != in_hours:
            continue
        days = _span_days(number, unit)
        if (asked <= days) if word.lower() in _BELOW else (asked >= days):
            return True
        holds = False
    return holds


def is_pointer(sentence: str) -> bool:
    """A sentence that sends the reader elsewhere ("Visit our … section for more information", "Please
    the 401(k) Company Match and Administration Guide for more details.") without stating an amount."""
    return bool(_POINTER.search(sentence)) or (bool(_POINTS_ON.search(sentence)) and not _AMOUNT_STATED.search(sentence))


def is_history(sentence: str, *, today: date | None = None) -> bool:
    """A superseded value, or one that takes effect only after `today`."""
    if _HISTORY.search(sentence):
        return True
    today = today or date.today()
    for day, month, year in _FROM_DATE.findall(sentence):
        try:
            starts = date(int(year), _MONTHS.split().index(month.lower()) + 1, int(day))
        except ValueError:
            continue
        if starts > today:
            return True
    return False


# Words for the staff a policy is for, and how much they weigh in `term_weights`.
POPULATION_WEIGHT = 0.25
_POPULATION = frozenset(stem(w) for w in "team teams member members teammate teammates employee employees staff "
                        "people worker workers everyone colleague colleagues company".split())


def term_weights(question_terms: set[str], texts: Sequence[set[str]]) -> dict[str, float]:
    """Inverse sentence frequency of each question term among the candidates (terms no candidate
    has are left out: they cannot tell candidates apart). Words for the staff a policy is for ("team
    members", "employees") count for a quarter: in a question they are the asker, rarely what is asked."""
    n = len(texts)
    out: dict[str, float] = {}
    for term in question_terms:
        df = sum(term in t for t in texts)
        if df:
            out[term] = math.log((n + 1) / (df + 0.5)) * (POPULATION_WEIGHT if term in _POPULATION else 1.0)
    return out



def coverage(weights: dict[str, float], sentence_terms: set[str], heading_terms: set[str]) -> float:
    """Weighted share of the question's terms the sentence has (its heading counts for half)."""
    total = sum(weights.values())
    if not total:
        return 0.0
    got = sum(w if t in sentence_terms else w / 2 if t in heading_terms else 0.0 for t, w in weights.items())
    return got / total


def with_places(terms: Iterable[str], text: str, *, widen: bool = False) -> set[str]:
    """Terms with each place name replaced by the place it stands for (so "UK" and "United
    Kingdom" are one term, counted once); see `places` for `widen`."""
    found = places(text, widen=widen)
    return ({t for t in terms if t not in _ALIAS} | found) if found else set(terms)
