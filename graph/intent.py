"""Graph logic, not model judgement: does a new message ask for a person?

Deliberately narrow, because a false positive skips the documents: "agent" alone in "Can a travel
agent book my hotel?" is not a request; "talk to an agent", "connect me", "human please" are. So is
asking for a person to call back ("I need someone from HR to call me") when the subject is a person
the asker wants, not a policy about who calls ("Will HR call me about my leave?", "Can my manager
call me on holiday?" are questions), and refusing the bot itself ("not a bot").
"""

from __future__ import annotations

import re

_EN = re.compile(
    r"\b(?:talk|speak|chat)\s+(?:to|with)\s+(?:a|an|the|some|someone|somebody|real|live|human|person|agent|"
    r"representative|staff|manager|people)\b|"
    # "need to talk to my hr business partner": the asker's own HR contact ("do I need to talk to …"
    # asks about a rule)
    r"(?<!\bdo i )(?<!\bdo we )(?<!should i )(?<!must i )\b(?:need|want|would like|'d like)\s+to\s+(?:talk|speak|chat)"
    r"\s+(?:to|with)\s+(?:my|our)\s+(?:\w+\s+){0,2}(?:partner|hrbp|rep|representative|advisor|adviser)\b|"
    r"\b(?:connect|transfer|put)\s+(?:me|this|it|my question)\b|\bescalate\s+(?:me|this|it|my question)\b|"
    # "forward it" is what one does with a phishing email; forwarding the question to a person is a request
    r"\b(?:forward|hand|pass)\s+(?:me|this|it|my question)\s+(?:on\s+|over\s+)?to\s+(?:a|an|someone|somebody|"
    r"a person|a human|hr|people ops|support|the team|your team|a manager)\b|"
    r"\b(?:real|live|actual)\s+(?:person|human|agent|people)\b|"
    r"\b(?:human|person|agent|representative)\s+please\b|"
    r"\b(?:want|need|get|like)\s+(?:to\s+\w+\s+)?(?:a|an)\s+(?:human|person|agent|representative)\b|"
    # a call back from a person: "I need someone from HR to call me", "can somebody phone me"
    r"\b(?:need|want|would like|'d like|\bcan|could|please\s+(?:have|get))\s+(?:someone|somebody|a person|a human|"
    r"a real person|an actual person)\b[\w\s,'-]{0,30}?\b(?:to\s+)?(?:call|phone|ring|contact|reach|get back to|"
    r"dm|message|ping|text|email|e-mail|slack)\s+me\b|"
    r"\b(?:need|want|would like|'d like)\s+(?:hr|my manager|a manager|people ops)\s+to\s+(?:call|phone|ring|contact)"
    r"\s+me\b|"
    r"\bnot\s+(?:a|an|the|this|some)\s+(?:bot|robot|chatbot|machine)\b|\b(?:no|stop the)\s+(?:bots?|chatbot)\b",
    re.IGNORECASE)
_EN_SHORT = re.compile(r"^\W*(?:a\s+)?(?:human|person|agent|representative|operator)\W*$", re.IGNORECASE)
_AR_VERBS = r"(?:التحدث|أتحدث|اتحدث|التكلم|أتكلم|اتكلم|التواصل|أتواصل|اتواصل|كلمني|حولني|حوّلني|وصلني|وصّلني|تحويلي)"
_AR_WANT = r"(?:أريد|اريد|أبغى|ابغى|أبي|ابي|أحتاج|احتاج|ممكن|هل يمكن|أرجو|ارجو)"
_AR_PEOPLE = r"(?:شخص|موظف|إنسان|انسان|بشري|مسؤول|مندوب|أحد الموظفين|خدمة العملاء)"
_AR_SOMEONE = r"(?:أحد|احد|حد|شخص|موظف)"
_AR_BOT = r"(?:روبوت|الروبوت|بوت|البوت)\b"
_AR_CALL = r"(?:يتصل بي|يتصل علي|يتصل عليّ|يتصل فيني|يتصل فيّ|يكلمني|يتواصل معي|يرد علي|يرد عليّ|يراسلني)"
_AR = re.compile(_AR_VERBS + r".{0,20}?" + _AR_PEOPLE + "|" + _AR_WANT + r"\s+(?:ال)?" + _AR_PEOPLE + "|"
                 + _AR_WANT + r".{0,40}?" + _AR_CALL + "|" + _AR_SOMEONE + r"\s.{0,40}?" + _AR_CALL + "|"
                 + r"(?:^|\s)(?:و?ليس|مش|مو|لا\s+(?:أريد|اريد)(?:\s+\S+){0,2}?)\s+(?:مع\s+|إلى\s+)?" + _AR_BOT)
_AR_SHORT = re.compile(r"^\W*" + _AR_PEOPLE + r"\W*(?:من فضلك|لو سمحت)?\W*$")


def wants_human(text: str) -> bool:
    text = text.strip()
    return bool(_EN.search(text) or _EN_SHORT.match(text) or _AR.search(text) or _AR_SHORT.match(text))


# -- conversation, not a question ------------------------------------------------------------------
#
# A message is conversation only when the whole of it is: every word belongs to the phrases below, so
# "hi, how many vacation days do I get?" or "thanks, and for contractors?" stay questions (a false
# positive would leave a question unanswered; a false negative only costs a search). The phrases are
# matched on a normal form: lower case, no punctuation or emoji, Arabic without diacritics and with one
# alef, a letter repeated for emphasis cut to two ("hiii", "thanksss").

GREETING, THANKS, ACKNOWLEDGEMENT, CAPABILITIES, CHASE = "greeting", "thanks", "acknowledgement", "capabilities", \
    "chase"

_PHRASES: dict[str, tuple[str, ...]] = {
    CAPABILITIES: (
        "what can you do", "what can u do", "what do you do", "what can you help with", "what can you help me with",
        "how can you help", "how can you help me", "what can i ask", "what can i ask you", "what should i ask",
        "what do you know", "what do you know about", "who are you", "what are you", "how do you work",
        "how does this work", "what is this", "what is cairn", "help", "help me", "what are you for",
        "ماذا تستطيع ان تفعل", "ماذا يمكنك ان تفعل", "ماذا تفعل", "ما الذي تستطيع فعله", "ما الذي يمكنك فعله",
        "كيف يمكنك مساعدتي", "كيف تساعدني", "وش تقدر تسوي", "ايش تقدر تسوي", "شو بتقدر تعمل", "من انت", "ما انت",
        "مساعده", "ساعدني"),
    CHASE: (
        "any update", "any updates", "any news", "update", "updates", "news", "still waiting", "im still waiting",
        "i am still waiting", "still there", "are you still there", "anyone there", "is anyone there",
        "anybody there", "is anybody there", "hello anyone", "anyone", "anybody", "ping", "bump", "any progress",
        "how long will it take", "how long will this take", "when will someone reply", "when will someone answer",
        "is someone looking at this", "is anyone looking at this", "is someone on it", "is anyone on it",
        "هل من جديد", "اي جديد", "في جديد", "فيه جديد", "اي تحديث", "هل من تحديث", "ما زلت انتظر", "مازلت انتظر",
        "لا زلت انتظر", "هل يوجد احد", "في احد", "فيه احد"),
    THANKS: (
        "thanks", "thank you", "thank u", "thankyou", "thx", "thnx", "tx", "ty", "tysm", "cheers", "ta",
        "many thanks", "much appreciated", "appreciate it", "appreciated", "thanks a lot", "thanks a bunch",
        "thanks so much", "thank you so much", "thank you very much", "thanks very much", "thanks again",
        "thank you again", "that helps", "that helped", "that was helpful", "very helpful", "helpful",
        "شكرا", "شكرا لك", "شكرا جزيلا", "شكرا كثير", "مشكور", "مشكورين", "يعطيك العافيه", "الله يعطيك العافيه",
        "جزاك الله خير", "جزاك الله خيرا", "تسلم", "تسلم يدك", "ممنون", "متشكر"),
    GREETING: (
        "hi", "hello", "hey", "heya", "hiya", "yo", "howdy", "greetings", "hallo", "hola", "good morning",
        "good afternoon", "good evening", "good day", "morning", "afternoon", "evening", "gm", "hi there",
        "hello there", "hey there", "how are you", "how are you doing", "how r u", "hows it going",
        "how is it going", "whats up", "sup", "bye", "goodbye", "bye bye", "see you", "see ya", "cya", "later",
        "have a good day", "have a nice day", "have a great day", "good night",
        "مرحبا", "اهلا", "اهلا وسهلا", "هلا", "هلا والله", "السلام عليكم", "سلام", "سلام عليكم",
        "السلام عليكم ورحمه الله", "السلام عليكم ورحمه الله وبركاته", "صباح الخير", "مساء الخير", "صباح النور",
        "مساء النور", "كيف حالك", "كيفك", "شلونك", "مع السلامه", "الى اللقاء", "تصبح على خير"),
    ACKNOWLEDGEMENT: (
        "ok", "okay", "okey", "k", "kk", "okie", "ok cool", "cool", "great", "nice", "perfect", "awesome",
        "excellent", "brilliant", "lovely", "alright", "all right", "got it", "gotcha", "understood", "noted",
        "makes sense", "sounds good", "fair enough", "will do", "sure", "fine", "good", "good to know",
        "no worries", "np", "no problem", "yes", "yep", "yeah", "yup", "no", "nope", "lol", "haha", "wow",
        "oh", "ah", "i see", "ok then", "thats it", "thats all", "nothing else", "all good", "great stuff",
        "تمام", "حسنا", "طيب", "اوكي", "اوك", "ممتاز", "رائع", "جميل", "فهمت", "واضح", "نعم", "لا", "اي", "ايوه",
        "ماشي", "زين", "كويس", "تمام التمام"),
}
# Words that may come with any of them without making a question ("hi cairn", "thanks so much team").
_FILLER = ("cairn", "bot", "there", "all", "team", "everyone", "folks", "guys", "friend", "mate", "again",
           "so much", "very much", "a lot", "really", "then", "and", "just", "oh", "ah", "um", "well", "please",
           "يا", "كايرن", "جزيلا", "و", "الله")
_ORDER = (CAPABILITIES, CHASE, THANKS, GREETING, ACKNOWLEDGEMENT)  # what a mixed message is answered as


def _normal(text: str) -> str:
    text = text.lower().replace("’", "'").replace("'", "")
    text = re.sub(r"[\u064B-\u065F\u0670\u0640]", "", text)  # Arabic diacritics and tatweel
    text = re.sub(r"[أإآ]", "ا", text).replace("ى", "ي").replace("ة", "ه")
    text = re.sub(r"[^\w\s]|_", " ", text)
    text = re.sub(r"(\w)\1{2,}", r"\1\1", text)  # "hiii" → "hii", "thanksss" → "thankss"
    return " ".join(text.split())


def _alternation(phrases: tuple[str, ...]) -> str:
    forms = sorted({_normal(p) for p in phrases}, key=len, reverse=True)
    # a phrase may be stretched for emphasis on its last letter: "hii", "thankss", "heyy"
    return "|".join(re.escape(f) + (r"+" if f[-1:].isalpha() else "") for f in forms)


_PHRASE = {name: _alternation(phrases) for name, phrases in _PHRASES.items()}
_ANY = "|".join([*(_PHRASE[name] for name in _ORDER), _alternation(_FILLER)])
_WHOLE = re.compile(rf"^(?:(?:{_ANY})(?:\s+|$))+$")
_FOUND = {name: re.compile(rf"(?:^|\s)(?:{_PHRASE[name]})(?=\s|$)") for name in _ORDER}
_ASKS_HOW = re.compile(r"\b(?:how|hows|what|whats|sup|كيف|كيفك|شلونك)\b")
MAX_WORDS = 12


def conversation_intent(text: str) -> str | None:
    """What a message that is only conversation says: greeting, thanks, acknowledgement, capabilities
    ("what can you do?") or chase ("any update?"); None for anything else, which is a question. A
    message with no words at all (an emoji, "?") is an acknowledgement; a request for a person never
    is conversation (`wants_human` decides it first)."""
    if wants_human(text):
        return None
    normal = _normal(text)
    if not normal:  # "👍" acknowledges; "?" or "??" asks whether anyone is there
        return None if not text.strip() else CHASE if "?" in text or "؟" in text else ACKNOWLEDGEMENT
    if len(normal.split()) > MAX_WORDS or not _WHOLE.match(normal):
        return None
    for name in _ORDER:
        if _FOUND[name].search(normal):
            if name == GREETING and text.rstrip().endswith(("?", "؟")) and not _ASKS_HOW.search(normal):
                return CHASE  # "hello?", "anyone?": is anybody there (a greeting asks "how are you?")
            return name
    return None  # filler words alone ("cairn", "please") ask nothing: a question for the search
