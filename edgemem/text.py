"""Text handling shared by the write path and the read path: no model, no store.

Both paths must cut text the same way: a keyword the gate indexes at ingestion is only found again
if the read path tokenises the question with the same rules and drops the same stopwords, and a
date the notes carry as "7 May 2023" is only matched if the packer, the Tier-3 facts and the tools
write it identically. So the tokenizer, the stopword list, keyword and entity extraction, the day
label and the input check live here, once, and ``ingest`` and ``recall`` both import them.

Keywords (MemFly's keyword layer): content words (not stopwords, not numbers-only), lower-cased,
ranked by a simple salience (capitalised words and longer words first, then first occurrence).
Entities: runs of capitalised words, skipping sentence-initial stopwords ("The", "I"), plus quoted
titles. Day labels are "8 May 2023": the form LoCoMo's gold answers use (Maharana et al. 2024).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta

from edgemem.display import size as shown_size
from edgemem.errors import BadInput

__all__ = [
    "ASSISTANT_SPEAKERS", "STOPWORDS", "MONTH_NAMES", "tokens", "extract_keywords", "extract_entities", "day_label", "iso_day_label",
    "check_text",
]

# A chat with an assistant (an imported ChatGPT history, a transcript with "Assistant:" turns): these
# speakers are the assistant, and the chat's other speaker is the user, whatever name it is given.
ASSISTANT_SPEAKERS = frozenset({"assistant", "edgemem", "ai", "bot", "chatbot", "chatgpt", "model", "system"})

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during
    each few for from further get got had hadn't has hasn't have haven't having he he'd he'll he's her here here's
    hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's
    like me more most mustn't my myself no nor not now of off on once only or other ought our ours ourselves out
    over own really same shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this those through to too
    under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where where's
    which while who who's whom why why's will with won't would wouldn't you you'd you'll you're you've your yours
    yourself yourselves yeah yes oh hey hi hello wow thanks thank okay ok well much many lot lots thing things
    something anything everything going gonna want wanted know think thought make made really pretty sure great
    good nice awesome amazing cool totally definitely always never even still though one two day days time times
    """.split()
)

# English names, not the locale's: strftime("%B") would write the labels in the user's language and
# the date tools, which read them back, only know these.
MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)

# Counts written as words, zero to twenty: "nine migraine days", "three trout".
NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}

# Holidays on a fixed day of the year, as (month, day): the write path dates "on Christmas Eve" by
# them, the read path knows that a holiday frames a stay rather than opening it.
HOLIDAYS = {
    "christmas eve": (12, 24), "christmas day": (12, 25), "christmas": (12, 25), "xmas": (12, 25),
    "boxing day": (12, 26), "st stephen's day": (12, 26), "new year's eve": (12, 31), "new years eve": (12, 31),
    "new year's day": (1, 1), "new years day": (1, 1), "halloween": (10, 31), "all saints day": (11, 1),
    "all saints' day": (11, 1), "valentine's day": (2, 14), "valentines day": (2, 14), "st patrick's day": (3, 17),
    "st george's day": (4, 23), "canada day": (7, 1), "fourth of july": (7, 4), "bastille day": (7, 14),
    "bonfire night": (11, 5), "guy fawkes night": (11, 5), "st andrew's day": (11, 30),
    "valentines": (2, 14), "valentine's": (2, 14), "nye": (12, 31), "nyd": (1, 1), "groundhog day": (2, 2),
    "juneteenth": (6, 19), "4th of july": (7, 4), "independence day": (7, 4), "veterans day": (11, 11),
    "veterans' day": (11, 11), "remembrance day": (11, 11), "st david's day": (3, 1), "burns night": (1, 25),
}
# Their names as written (a group ``h``): "Xmas", "New Years Eve", "St. Patrick's Day", "all saints'".
HOLIDAY_PATTERN = (
    r"(?P<h>christmas\s+eve|christmas\s+day|christmas|xmas|boxing\s+day|new\s+year['’]?s\s+(?:eve|day)"
    r"|halloween|all\s+saints['’]?\s+day|valentine['’]?s\s+day|fourth\s+of\s+july|canada\s+day|bastille\s+day"
    r"|bonfire\s+night|guy\s+fawkes\s+night|st\.?\s+(?:patrick|george|andrew|stephen|david)['’]?s\s+day"
    r"|valentine['’]?s(?!\s+(?:card|gift|present|dinner|date|plans?)\b)|nye|nyd|groundhog\s+day|juneteenth"
    r"|4th\s+of\s+july|independence\s+day|veterans['’]?\s+day|remembrance\s+day|burns\s+night)"
)


_HOLIDAY_KEYS = {name.replace("'", ""): day for name, day in HOLIDAYS.items()}


def easter_sunday(year: int) -> date:
    """Western Easter Sunday of ``year`` (the Gregorian computus: the first Sunday after the
    ecclesiastical full moon on or after 21 March)."""
    golden = year % 19
    century, in_century = divmod(year, 100)
    leap_skips, leap_rest = divmod(century, 4)
    moon_fix = (century + 8) // 25
    epact = (19 * golden + century - leap_skips - (century - moon_fix + 1) // 3 + 15) % 30
    weekday_fix = (32 + 2 * leap_rest + 2 * (in_century // 4) - epact - in_century % 4) % 7
    late = (golden + 11 * epact + 22 * weekday_fix) // 451
    month, day = divmod(epact + weekday_fix - 7 * late + 114, 31)
    return date(year, month, day + 1)


def _thanksgiving(year: int) -> date:
    first = date(year, 11, 1)
    return first + timedelta(days=(3 - first.weekday()) % 7 + 21)  # the fourth Thursday of November


def nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    """The ``n``-th ``weekday`` (0 = Monday) of a month; ``n`` = -1 is the last."""
    if n < 0:
        last = date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)
        return last - timedelta(days=(last.weekday() - weekday) % 7)
    first = date(year, month, 1)
    return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))


def _on(month: int, weekday: int, n: int) -> Callable[[int], date]:
    return lambda year: nth_weekday(year, month, weekday, n)


def _election_day(year: int) -> date:
    return nth_weekday(year, 11, 0, 1) + timedelta(days=1)  # the Tuesday after the first Monday


# Feasts whose day moves with the year, as (first, last) offsets from a year's anchor day: the write
# path dates "Easter Monday" and "the weekend after Easter" by them.
MOVABLE_FEASTS: dict[str, tuple[Callable[[int], date], int, int]] = {
    "easter": (easter_sunday, 0, 0), "easter sunday": (easter_sunday, 0, 0),
    "easter monday": (easter_sunday, 1, 1), "good friday": (easter_sunday, -2, -2),
    "holy saturday": (easter_sunday, -1, -1), "easter weekend": (easter_sunday, -1, 0),
    "the weekend after easter": (easter_sunday, 6, 7), "the week after easter": (easter_sunday, 1, 7),
    "thanksgiving": (_thanksgiving, 0, 0), "thanksgiving day": (_thanksgiving, 0, 0),
    "black friday": (_thanksgiving, 1, 1), "cyber monday": (_thanksgiving, 4, 4),
    "shrove tuesday": (easter_sunday, -47, -47), "pancake day": (easter_sunday, -47, -47),
    "mardi gras": (easter_sunday, -47, -47), "ash wednesday": (easter_sunday, -46, -46),
    "palm sunday": (easter_sunday, -7, -7), "mothering sunday": (easter_sunday, -21, -21),
    # The national days on a weekday of a month (US, and the UK's bank holidays). "Mother's Day" is
    # left out: the second Sunday of May in the US, Mothering Sunday in the UK.
    "memorial day": (_on(5, 0, -1), 0, 0), "memorial day weekend": (_on(5, 0, -1), -2, 0),
    "labor day": (_on(9, 0, 1), 0, 0), "labor day weekend": (_on(9, 0, 1), -2, 0),
    "mlk day": (_on(1, 0, 3), 0, 0), "martin luther king day": (_on(1, 0, 3), 0, 0),
    "martin luther king jr day": (_on(1, 0, 3), 0, 0), "presidents day": (_on(2, 0, 3), 0, 0),
    "columbus day": (_on(10, 0, 2), 0, 0), "indigenous peoples day": (_on(10, 0, 2), 0, 0),
    "fathers day": (_on(6, 6, 3), 0, 0), "election day": (_election_day, 0, 0),
    "early may bank holiday": (_on(5, 0, 1), 0, 0), "may day bank holiday": (_on(5, 0, 1), 0, 0),
    "spring bank holiday": (_on(5, 0, -1), 0, 0), "august bank holiday": (_on(8, 0, -1), 0, 0),
    "summer bank holiday": (_on(8, 0, -1), 0, 0),
}
# Their names as written (a group ``f``).
MOVABLE_PATTERN = (
    r"(?P<f>the\s+week(?:end)?\s+after\s+easter|easter\s+(?:sunday|monday|weekend)|easter"
    r"|good\s+friday|holy\s+saturday|thanksgiving(?:\s+day)?|black\s+friday|cyber\s+monday"
    r"|shrove\s+tuesday|pancake\s+day|mardi\s+gras|ash\s+wednesday|palm\s+sunday|mothering\s+sunday"
    r"|(?:memorial|labor)\s+day(?:\s+weekend)?|mlk\s+day|martin\s+luther\s+king(?:\s+jr\.?)?\s+day"
    r"|presidents['’]?\s+day|columbus\s+day|indigenous\s+peoples['’]?\s+day|father['’]?s['’]?\s+day"
    r"|election\s+day|(?:early\s+may|may\s+day|spring|august|summer)\s+bank\s+holiday)"
)


def movable_feast(name: str, year: int) -> tuple[date, date]:
    """(first, last) day of a movable feast as MOVABLE_PATTERN matched it, in ``year``."""
    anchor, first, last = MOVABLE_FEASTS[" ".join(re.sub(r"['’.]", "", name.lower()).split())]
    day = anchor(year)
    return day + timedelta(days=first), day + timedelta(days=last)


def holiday_day(name: str) -> tuple[int, int]:
    """(month, day) of a holiday as HOLIDAY_PATTERN matched it, apostrophes or not."""
    return _HOLIDAY_KEYS[" ".join(re.sub(r"['’]", "", name.lower()).replace("st. ", "st ").split())]


# Where a sentence ends: after . ! or ? and the space before the next sentence (the packer's sentence
# extraction and the write path's sentence vectors cut text the same way).
# A title's full stop ends no sentence: "the landlord is this sweet old portuguese man, sr. medeiros"
# is one sentence, and cut after "sr." it lost the name the question asked for.
_TITLES = ("mr", "mrs", "ms", "dr", "sr", "sra", "st", "jr", "prof", "mt", "vs", "e.g", "i.e")
SENTENCE_END = re.compile("".join(rf"(?<!\b{re.escape(t)}\.)" for t in _TITLES) + r"(?<=[.!?])\s+(?=\S)", re.IGNORECASE)
# Words are letters of any script: "Oisín", "Sinéad", "José" are one word each, not "Ois" and "n".
_LETTER = r"[^\W\d_]"
_TOKEN = re.compile(rf"{_LETTER}(?:{_LETTER}|['\-])*{_LETTER}|{_LETTER}")
_WORD = re.compile(rf"{_LETTER}(?:{_LETTER}|['\-])*")
_JOINS = {"of", "the", "de", "van", "von"}  # inside a name: "Bank of Ireland", "Vincent van Gogh"
_QUOTED = re.compile(r"[\"“]([^\"”]{2,60})[\"”]")


def tokens(text: str) -> list[str]:
    """Lower-cased words in order (letters, inner apostrophes and hyphens kept)."""
    return [t.lower().strip("'-") for t in _TOKEN.findall(text)]


def extract_keywords(text: str, limit: int = 10) -> list[str]:
    seen: dict[str, float] = {}
    for pos, raw in enumerate(_TOKEN.findall(text)):
        word = raw.lower().strip("'-")
        if len(word) < 3 or word in STOPWORDS:
            continue
        score = len(word) / 10 + (1.0 if raw[0].isupper() and pos > 0 else 0.0) - pos / 1000
        seen[word] = max(seen.get(word, -1e9), score)
    return [w for w, _ in sorted(seen.items(), key=lambda kv: -kv[1])[:limit]]


def _capital_runs(text: str) -> list[str]:
    """Runs of capitalised words of two letters or more, one space apart, joined by "of", "the",
    "de", "van", "von" ("Bank of Ireland"): the names a text writes."""
    words = list(_WORD.finditer(text))
    runs: list[str] = []
    current: list[re.Match] = []

    def capital(w: re.Match) -> bool:
        return w.group(0)[0].isupper() and len(w.group(0)) > 1 and (w.start() == 0 or not text[w.start() - 1].isalnum())

    def spaced(a: re.Match, b: re.Match) -> bool:
        return text[a.end():b.start()].isspace()

    k = 0
    while k < len(words):
        w = words[k]
        if capital(w) and (not current or spaced(current[-1], w)):
            current.append(w)
            k += 1
            continue
        join = w.group(0).lower() in _JOINS and current and spaced(current[-1], w)
        if join and k + 1 < len(words) and capital(words[k + 1]) and spaced(w, words[k + 1]):
            current.extend([w, words[k + 1]])
            k += 2
            continue
        if current:
            runs.append(text[current[0].start():current[-1].end()])
        current = [w] if capital(w) else []
        k += 1
    if current:
        runs.append(text[current[0].start():current[-1].end()])
    return runs


def extract_entities(text: str, limit: int = 10) -> list[str]:
    found: dict[str, None] = {}
    for run in _capital_runs(text):
        words = run.split()
        while words and words[0].lower() in STOPWORDS:
            words = words[1:]
        if words:
            found[" ".join(words)] = None
    for match in _QUOTED.finditer(text):
        found[match.group(1).strip()] = None
    return list(found)[:limit]


def day_label(day: date, *, month: bool = True, year: bool = True) -> str:
    """'8 May 2023' (or '8 May' / '8' without the parts a span label already says)."""
    parts = [str(day.day)]
    if month:
        parts.append(MONTH_NAMES[day.month - 1])
    if year:
        parts.append(str(day.year))
    return " ".join(parts)


def iso_day_label(value: str) -> str:
    """The day label of an ISO 8601 date or timestamp (an event time column)."""
    return day_label(datetime.fromisoformat(value))


def check_text(text: object, max_bytes: int, what: str = "text", hint: str = "") -> str:
    """The text itself, or BadInput with a one-line reason (anything a user hands in: a turn to
    remember, a file chunk, a question); ``hint`` says what to do instead of an over-size text."""
    if not isinstance(text, str):
        raise BadInput(f"{what} must be a string")
    if "\x00" in text:
        raise BadInput(f"{what} contains NUL bytes: binary data is not remembered")
    if not text.strip():
        raise BadInput(f"{what} is empty")
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        raise BadInput(f"{what} is {shown_size(size)}; the limit is {shown_size(max_bytes)} (setting max_text_bytes)"
                       + (f": {hint}" if hint else ""))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(f"{what} is not valid Unicode text") from None
    return text
