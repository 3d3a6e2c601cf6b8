"""Quantity limits in stored rules, and the amounts a proposal asks about (constraint-validation).

A rule is often a number, not a day: "eating out max £250 a month", "I don't take jobs more than 30
miles from Bristol", "budget for the night, £200". A proposal names an amount of the same unit ("a
job about 40 miles away", "a £45 dinner"), and whether it fits is arithmetic, which a 1.5B model
gets wrong and code does not. Limits change ("happy to go up to 40 miles now, not 30"); the
newest limit on the same thing is the one that holds.

An amount is a number with its unit: a currency sign or word ("£200", "200 euro", "£18k", "350 zł",
"400 złoty": one unit however the currency is written), or the word after the number, in any
alphabet ("40 miles", "40-mile", "3 nights"); units compare by their singular form.
A limit is an amount with a bound before it in its clause: an upper bound ("up to", "max",
"at most", "no more than", "under", "within", "capped at", "limit", "budget", "allowance") or a lower one
("at least", "minimum"). "More than" / "over" bound only a sentence that forbids ("don't take jobs
more than 30 miles"): said plainly ("I ran more than 30 miles") it is a fact, not a rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Amount", "Limit", "amounts", "limits", "asked_amount", "has_limit", "unitless_limits", "CURRENCY_NAMES", "CURRENCIES"]

_CURRENCY_WORDS = {"euro": "€", "euros": "€", "eur": "€", "dollar": "$", "dollars": "$", "usd": "$", "bucks": "$",
                   "pound": "£", "pounds": "£", "quid": "£", "gbp": "£",
                   # A currency written as a word is one unit however it is spelt or abbreviated:
                   # "350 zł" and "a limit of 400 złoty" compare.
                   "zł": "zł", "złoty": "zł", "zloty": "zł", "zlotys": "zł", "pln": "zł",
                   "yen": "¥", "jpy": "¥", "rupee": "₹", "rupees": "₹", "inr": "₹",
                   "franc": "CHF", "francs": "CHF", "chf": "CHF", "krona": "kr", "kronor": "kr", "krone": "kr",
                   "kroner": "kr", "sek": "kr", "nok": "kr", "dkk": "kr", "peso": "peso", "pesos": "peso",
                   "rand": "R", "zar": "R", "naira": "₦", "ngn": "₦"}
_CURRENCIES = frozenset("£$€") | frozenset(_CURRENCY_WORDS.values())
_SIGNS = frozenset("£$€¥₹₦R")  # written before the number ("R1,300": rand)
# A number as written: "1,500", "1500.50", or grouped by spaces as much of Europe and South Africa
# write thousands ("83 400 kroner", "R2 000"): groups of three after the first, nothing more after.
_N = r"(?P<n>\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?!\d)(?![,.]\d)|\d[\d,]*(?:\.\d+)?)"
# A sign before the number: "£200", "₦100k", and the rand's letter ("R1,300", "R2 000"), which is a
# sign only right before a number that no letter or digit follows ("R2D2" is no amount).
_MONEY = re.compile(r"(?P<sign>[£$€¥₹₦]|(?<![\w.])R(?=\s?\d))\s?" + _N + r"(?P<k>\s?k\b)?(?![^\W\d_])")
_MEASURE = re.compile(
    r"(?<![\w.,:£$€/])" + _N + r"(?P<k>k)?(?:\s?-\s?|\s)?(?P<unit>[^\W\d_](?:[^\W\d_]|/)*)?(?![\w:])"
)
# Words after a number that are not what it counts: times of day, dates, ordinals.
_NOT_UNITS = {
    "am", "pm", "st", "nd", "rd", "th", "o'clock", "oclock", "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul",
    "aug", "sep", "sept", "oct", "nov", "dec", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
    "sunday", "a", "an", "the", "and", "or", "to", "of", "in", "on", "at", "for", "from", "with", "by", "is",
    "was", "now", "not", "per", "each", "all", "this", "that", "out", "away", "more", "less", "max", "min",
}
_UPPER = re.compile(
    r"\b(?:up\s+to|max(?:imum)?|at\s+(?:the\s+)?most|no\s+more\s+than|not\s+more\s+than|no\s+(?:further|longer)\s+than|"
    r"under|below|less\s+than|within|capped?\s+(?:at|of)|cap|limit(?:ed)?(?:\s+(?:of|to|is|at))?|budget(?:ed)?|"
    r"spend(?:ing)?\s+(?:limit|cap)|allowance)\b",
    re.IGNORECASE,
)
_LOWER = re.compile(r"\b(?:at\s+least|min(?:imum)?|no\s+less\s+than|not\s+less\s+than|no\s+fewer\s+than)\b", re.IGNORECASE)
_BEYOND = re.compile(r"\b(?:more\s+than|over|above|beyond|further\s+than|longer\s+than|past)\b", re.IGNORECASE)
_FORBIDS = re.compile(
    r"\b(?:never|don['’]?t|do\s+not|won['’]?t|will\s+not|can['’]?t|cannot|not|no|avoid|nothing)\b", re.IGNORECASE
)
# "anything over $200, make me wait 48 hrs first": above the amount, something must wait or be asked
# first; it bounds what is done straight away, as "never more than" does.
_DEFERS = re.compile(r"\b(?:wait|ask|check\s+with|sleep\s+on|run\s+it\s+(?:by|past)|think\s+(?:it\s+over|twice)|"
                     r"hold\s+off)\b", re.IGNORECASE)
_JUST_BEYOND = re.compile(r"\b(?:more\s+than|over|above)\s*$", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.;!?()\n]|,\s+(?:but|and|so)\b")
_BOUND_WORDS = 6  # a bound governs an amount at most this many words later
# "I've spent £270 ... does a £45 dinner still fit?": what is already used counts with what is asked.
_SPENT = re.compile(r"\b(?:spent|used|paid|already|so\s+far|done|booked)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Amount:
    value: float
    unit: str  # "£", "$", "€", or a singular word: "mile", "night"
    start: int  # offset in the text
    written: str  # as written: "£200", "40 miles"

    def show(self, value: float | None = None) -> str:
        v = self.value if value is None else value
        number = f"{v:,.2f}".rstrip("0").rstrip(".") if v % 1 else f"{int(v):,}"
        if self.unit in _SIGNS:
            return f"{self.unit}{number}"
        if self.unit in _CURRENCIES:
            return f"{number} {self.unit}"
        return f"{number} {self.unit}{'' if v == 1 or not self.unit.isalpha() else 's'}"


@dataclass(frozen=True)
class Limit:
    amount: Amount
    upper: bool  # True: at most amount; False: at least amount

    def allows(self, value: float) -> bool:
        return value <= self.amount.value if self.upper else value >= self.amount.value


def _number(text: str, k: str | None) -> float:
    return float(re.sub(r"[,\s]", "", text)) * (1000 if k else 1)


def _singular(word: str) -> str:
    word = word.lower()
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def amounts(text: str) -> list[Amount]:
    """Every amount written in the text, in order: money first claims its span, then number + word."""
    found: list[Amount] = []
    taken: list[tuple[int, int]] = []
    for m in _MONEY.finditer(text):
        found.append(Amount(_number(m.group("n"), m.group("k")), m.group("sign"), m.start(), m.group(0).strip()))
        taken.append((m.start(), m.end()))
    for m in _MEASURE.finditer(text):
        if any(a <= m.start() < b for a, b in taken):
            continue
        unit = (m.group("unit") or "").lower()
        if unit in _CURRENCY_WORDS:
            found.append(Amount(_number(m.group("n"), m.group("k")), _CURRENCY_WORDS[unit], m.start(), m.group(0).strip()))
            continue
        if not unit or unit in _NOT_UNITS or re.fullmatch(r"(?:19|20)\d\d", m.group("n")):
            continue
        found.append(Amount(_number(m.group("n"), m.group("k")), _singular(unit), m.start(), m.group(0).strip()))
    return sorted(found, key=lambda a: a.start)


def _clause_before(text: str, start: int) -> str:
    """The words before ``start`` in the same clause, at most _BOUND_WORDS of them."""
    head = _CLAUSE_END.split(text[:start])[-1]
    return " ".join(head.split()[-_BOUND_WORDS:])


def limits(sentence: str, *, budget: bool = True) -> list[Limit]:
    """The limits a rule sentence states: each amount with a bound before it in its clause; with
    ``budget``, also the first sum of money in a sentence about a budget ("budget for the night,
    £200") — not in a question, where "does a £45 dinner fit my budget?" names the amount asked."""
    out = []
    forbids = _FORBIDS.search(sentence) is not None
    defers = _DEFERS.search(sentence) is not None
    budget_sentence = budget and re.search(r"\bbudget", sentence, re.IGNORECASE) is not None
    for amount in amounts(sentence):
        before = _clause_before(sentence, amount.start)
        if _RISES_TO.search(before):
            continue  # "the naust goes up to 1 500 kroner a month": a price going up, no bound
        if _LOWER.search(before):
            out.append(Limit(amount, upper=False))
        elif _UPPER.search(before) or (forbids and _BEYOND.search(before)) or (defers and _JUST_BEYOND.search(before)):
            out.append(Limit(amount, upper=True))
        elif budget_sentence and amount.unit in _CURRENCIES and not out:
            out.append(Limit(amount, upper=True))  # "budget for the night, £200"
    return out


# A price or a count rising to an amount is no bound on it: "the naust goes up to 1 500 kroner a month",
# "rent went up to £900" (but "happy to go up to 40 miles" is one: the user's own reach).
_RISES_TO = re.compile(r"\b(?:goes|went|gone|rises|rose|risen|jumps|jumped|increases|increased|shot|bumped)\s+up\s+to\s*$|"
                       r"\b(?:goes|went|gone|rises|rose|risen|jumps|jumped|increases|increased)\s+up\s+to\b[^,;]*$",
                       re.IGNORECASE)
# A currency's names in words ("kroner", "euros"): they say what unit, never what is limited.
CURRENCY_NAMES = frozenset(_CURRENCY_WORDS)
CURRENCIES = _CURRENCIES  # the units a sum of money comes in: "£", "kr", "R", ...


def unit_word(unit: str) -> str:
    """A word that :func:`amounts` reads as ``unit`` after a number: "kroner" for "kr", "miles" for "mile"."""
    return max((word for word, sign in _CURRENCY_WORDS.items() if sign == unit), key=len, default=unit)


_BARE_AMOUNT = re.compile(r"(?<![\w.,:£$€/])" + _N.replace("(?P<n>", "(?:") + r"(?![\w%£$€])")
_FROM_TO = re.compile(r"\bfrom\s+" + _N.replace("(?P<n>", "(?:") + r"\s+to\b", re.IGNORECASE)


def unitless_limits(sentence: str, unit: str) -> list[Limit]:
    """The limits a sentence states in numbers written without their unit ("New limit for the engine
    is 85 000, and that is final."), read as ``unit``; none when it writes any amount with one."""
    if amounts(sentence) or not _UPPER.search(sentence) and not _LOWER.search(sentence):
        return []
    word = unit_word(unit)
    # "engine limit raised from 60 000 to 85 000": the value it was is no limit now
    sentence = _FROM_TO.sub(lambda m: "from " + "#" * (len(m.group(0)) - 8) + " to", sentence)
    return limits(_BARE_AMOUNT.sub(lambda m: f"{m.group(0)} {word}", sentence))


def has_limit(text: str) -> bool:
    return any(limits(sentence) for sentence in re.split(r"(?<=[.!?;])\s+", text))


def asked_amount(question: str, unit: str) -> tuple[float, list[Amount]] | None:
    """The amount a proposal asks about in ``unit``, and the amounts it adds up: the one named, or
    with "spent / already / so far" everything named in that unit ("£270 spent + a £45 dinner")."""
    named = [a for a in amounts(question) if a.unit == unit]
    if not named:
        return None
    if len(named) > 1 and _SPENT.search(question):
        return sum(a.value for a in named), named
    return named[-1].value, [named[-1]]
