"""Which evaluation conversations are for tuning and which for checking.

The split is by conversation, never by question. Every question of a conversation is answered
from the same history: a threshold, prompt or rule tuned on some of its questions has already
been fitted to that history (its names, its dates, its phrasing), so the other questions of the
same conversation no longer measure anything the tuning did not see. A *check* conversation
therefore contributes nothing to tuning: no thresholds, no prompt wording, and no router
examples (``recall/data/router_examples.jsonl`` must never hold a question from a check
conversation, nor a paraphrase of one).

LoCoMo: ``conv-26`` and ``conv-30`` were already used for tuning in earlier work, so they can
only be *tune*; ``conv-41`` joins them. ``conv-42``, ``conv-43`` and ``conv-44`` are *check*.
The personal set (``eval/data/personal.json``): two personas tune, two check. The check personas
were read while tuning in the fifth session, so two fresh ones (``eval/data/personal-fresh.json``,
written with their keys by a helper that saw no edgemem code) are check as well. The eleventh
session read Priya's and Jonas's answers again and fitted rule, count and ownership changes on
them: they keep the label ``check`` so earlier runs stay comparable, but only the fresh personas
(Ines, Kwame) are a check nothing was tuned on. Two more personas (``eval/data/personal-more.json``,
Lena and Rafael), written with their keys in the twenty-first session by a helper that saw no
edgemem code, are *tune*: they give the rule, plan and count mechanisms histories to be fitted on
without spending the fresh check. Two more personas, Kai and Graciela
(``eval/data/personal-tune2.json``), were written the same way in the twenty-fifth session; their
first run, before anything was fitted on them, is reported as unseen, and they are *tune* after it.
Ines and Kwame were the check from their writing to the twenty-sixth session (last reported there,
36/88); in the twenty-seventh they became *tune*, their failures read, and two personas written then
by a helper that saw no edgemem code (``eval/data/personal-fresh2.json``) are the check nothing was
tuned on. After their one run that session, a review diff printed the first ~80 characters of their
long lines (turns and gold answers); nothing was changed in the code after that except a refactor.
Halina and Chidi (last reported as check there, 25/88) became *tune* in the twenty-eighth session,
and two personas written then by a helper that saw no edgemem code, Shona and Margaux
(``eval/data/personal-fresh3.json``), are the check nothing was tuned on. They stayed the check to the
thirty-third session (last reported there, 38/88), read only as totals and count-only causes; in the
thirty-fourth they became *tune*, their failures read, and two personas written then by a helper that
saw no edgemem code, Bart and Deepa (``eval/data/personal-fresh4.json``), are the check nothing was
tuned on.
Oskar and Nomvula (``eval/data/personal-fresh5.json``), written with their keys in the thirty-seventh
session by helpers that saw no edgemem code, are *tune*: their first run, on the 36th session's code
before anything was fitted on them, is reported as unseen (a second reading of how the code does on a
history it was not built against, beside the check), and they give the mechanisms fresh histories to
be fitted on. Aiko and Brodie (``eval/data/personal-fresh6.json``), written the same way in the
forty-first session, are *tune* on the same terms: their first run, on that session's code before
anything was fitted on them, is reported as unseen.

The date battery (``eval/data/date-battery.jsonl``) and the QA battery (``eval/data/qa-battery.jsonl``),
both written in the twenty-ninth session by helpers that saw no edgemem code, split by item, not by
conversation: their items share no history. :func:`edgemem.eval.date_battery.split_of` puts an item
in *tune* or *check* by a hash of its id.
"""

from __future__ import annotations

from collections.abc import Iterable

from edgemem.errors import BadInput

TUNE = "tune"
CHECK = "check"

SPLITS: dict[str, str] = {
    "conv-26": TUNE,
    "conv-30": TUNE,
    "conv-41": TUNE,
    "conv-42": CHECK,
    "conv-43": CHECK,
    "conv-44": CHECK,
    "persona-maya": TUNE,
    "persona-tom": TUNE,
    "persona-priya": CHECK,
    "persona-jonas": CHECK,
    "persona-ines": TUNE,
    "persona-kwame": TUNE,
    "persona-lena": TUNE,
    "persona-rafael": TUNE,
    "persona-kai": TUNE,
    "persona-graciela": TUNE,
    "persona-halina": TUNE,
    "persona-chidi": TUNE,
    "persona-shona": TUNE,
    "persona-margaux": TUNE,
    "persona-bart": CHECK,
    "persona-deepa": CHECK,
    "persona-oskar": TUNE,
    "persona-aiko": TUNE,
    "persona-brodie": TUNE,
    "persona-nomvula": TUNE,
}


def split_of(sample_id: str) -> str:
    """``"tune"`` or ``"check"`` for a known conversation; BadInput for any other id."""
    try:
        return SPLITS[sample_id]
    except (KeyError, TypeError):
        raise BadInput(f"conversation {sample_id!r} is in no evaluation split; known: {', '.join(SPLITS)}") from None


def samples_in(split: str, sample_ids: Iterable[str]) -> list[str]:
    """The ids among ``sample_ids`` that belong to ``split``, in their order (unknown ids raise)."""
    if split not in (TUNE, CHECK):
        raise BadInput(f"unknown split {split!r}; expected {TUNE!r} or {CHECK!r}")
    return [sid for sid in sample_ids if split_of(sid) == split]
