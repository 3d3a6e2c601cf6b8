"""Validator cascade (MemFlow B.3) with its LoCoMo-specific owner check; scripted judge only."""

from __future__ import annotations

from edgemem.recall.validator import (
    OVERLAP_TAU,
    echoes_question,
    invented_name,
    is_hard_failure,
    overlap,
    rule_governs,
    validate,
    wrong_kind,
    wrong_owner,
)
from edgemem.runtime.fake import ScriptedLLM

CONTEXT = (
    "(13 September 2023, Caroline) Thanks, Melanie! This necklace is a gift from my grandma in my home country, Sweden.\n"
    "(8 May 2023, Melanie) I ran a charity race for mental health last Saturday [6 May 2023]."
)


def test_hard_failures_escalate_without_a_model_call() -> None:
    llm = ScriptedLLM()
    for answer in ("", "ESCALATE_REQUIRED", "The context does not mention her grandmother.", "I don't know.",
                   "ANSWER: None", "N/A"):
        assert validate("Q?", answer, CONTEXT, llm).stage == "hard_failure"
    assert not llm.calls
    # To "how many", "None" is an answer: zero.
    assert validate("How many kids does Melanie have?", "None", CONTEXT, None).stage != "hard_failure"


def test_an_answer_that_only_repeats_the_question_is_rejected_without_a_model_call() -> None:
    llm = ScriptedLLM()
    for question, answer in (("which hotel did amaka book for us in osu?", "OSU"),
                             ("What was the name of the garage on Wielicka Street?", "Wielicka Street"),
                             ("What does Jon plan to do at the grand opening of his dance studio?", "Open the dance studio.")):
        verdict = validate(question, answer, CONTEXT, llm)
        assert (verdict.grounded, verdict.stage, verdict.reason) == (False, "hard_failure", "echo")
    assert not llm.calls
    # A number, a name or a word the question does not hold is an answer; a yes/no question may echo.
    assert not echoes_question("how many days early was Tomás?", "19 days early")
    assert not echoes_question("Where did Melanie run?", "a charity race")
    assert not echoes_question("Is the concert still on the 22nd?", "the 22nd")


def test_an_answer_about_someone_elses_thing_is_rejected() -> None:
    verdict = validate("What country is Melanie's grandma from?", "Sweden", CONTEXT, None)
    assert (verdict.grounded, verdict.stage) == (False, "wrong_owner")
    assert validate("What country is Caroline's grandma from?", "Sweden", CONTEXT, None).grounded
    assert not wrong_owner("Where did Melanie run?", "a charity race", CONTEXT)


def test_short_answers_pass_and_long_ones_go_to_the_judge() -> None:
    assert validate("When did Melanie run the race?", "6 May 2023", CONTEXT, None).stage == "short_answer"
    llm = ScriptedLLM(['"no"'])
    long = "Melanie ran a charity race for mental health to raise money for her local hospital."
    verdict = validate("What did Melanie do?", long, CONTEXT, llm)
    assert (verdict.grounded, verdict.stage) == (False, "judge") and llm.calls[0].max_tokens == 8


def test_overlap_fallback_when_the_judge_fails() -> None:
    long = "Melanie ran a charity race for mental health on the Saturday before the conversation."
    verdict = validate("What did Melanie do?", long, CONTEXT, ScriptedLLM(["maybe?"]))
    assert verdict.stage == "overlap" and verdict.grounded and verdict.score >= OVERLAP_TAU
    unrelated = "She collects antique clocks and repairs vintage motorcycles every winter weekend."
    assert overlap(unrelated, CONTEXT) < OVERLAP_TAU
    assert not validate("What does Melanie collect?", unrelated, CONTEXT, None).grounded


SHOES = (
    "(12 July 2023, Melanie) Wow, Caroline! Luna and Oliver are so sweet. Just got some new shoes, too!\n"
    "(12 July 2023, Caroline) Love that purple color! For walking or running?\n"
    "(12 July 2023, Melanie) Running! I've been getting into it lately, it boosts my mood."
)


def test_an_answer_said_by_the_other_speaker_is_rejected() -> None:
    """LoCoMo category 5: the thing was Melanie's; a vocative "Wow, Caroline!" does not make it Caroline's."""
    assert wrong_owner("What are the new shoes that Caroline got used for?", "new shoes", SHOES)
    assert validate("Why did Caroline get into running?", "it boosts her mood", SHOES, None).stage == "wrong_owner"
    # the same answers about the one who said them pass
    assert not wrong_owner("What are the new shoes that Melanie got used for?", "new shoes", SHOES)
    assert not wrong_owner("Why did Melanie get into running?", "it boosts her mood", SHOES)


def test_owner_rule_stays_silent_when_the_context_cannot_say() -> None:
    named = SHOES + "\n(13 July 2023, Melanie) I bought Caroline a pair of running shoes as a gift."
    assert not wrong_owner("What shoes did Caroline get?", "running shoes", named)  # the line names her
    assert not wrong_owner("What did Caroline and Melanie buy?", "new shoes", SHOES)  # two people asked about
    assert not wrong_owner("What did Caroline buy?", "a telescope", SHOES)  # no line holds the answer
    assert not wrong_owner("What did Caroline buy?", "new shoes", "Just got some new shoes, too!")  # no speakers


def test_a_question_copied_back_is_no_answer() -> None:
    assert is_hard_failure("The kids looked so cute, Mel! How did they handle the accident?")
    assert not is_hard_failure("They were scared but fine.")
    # the model saying the context lacks it is no answer, whatever verdict word it opened with
    assert is_hard_failure("No — The context does not provide any information about bonfires on allotments.")


def test_a_name_the_context_never_writes_is_made_up() -> None:
    ctx = ("(18 March 2025, Maya) staying at Casa Azahar, a little guesthouse in Triana, for the whole trip\n"
           "(22 July 2025, Maya) Mum's coming to Seville too, flying in from Dublin")
    assert invented_name("The hotel is the Seville Hotel.", ctx) == "Seville Hotel."
    assert invented_name("She stays at Casa Azahar in Triana.", ctx) is None
    assert invented_name("Mum flies in from Dublin on Tuesday 22 July", ctx) is None
    # A name the question writes is the user's own; a name ends with its sentence.
    assert invented_name("A Troilo record for Father's Day.", "(1 May 2026, Gloria) Papá adores Troilo") == "Father's Day."
    assert invented_name("A Troilo record for Father's Day.", "(1 May 2026, Gloria) Papá adores Troilo",
                         "a present for Papá for Father's Day?") is None
    assert invented_name("A trip to Wanaka. The notes say so.", "(1 May 2026, Kai) wanaka trip with Ana") is None
    verdict = validate("Which hotel is Mum staying at in Seville?", "She is at the Giralda Palace Hotel.", ctx, None)
    assert (verdict.grounded, verdict.stage) == (False, "invented_name")
    # A suggestion names what it suggests: the judge reads it instead.
    judge = ScriptedLLM(['"yes"'])
    verdict = validate("Suggest a weekend away for me and Mum", "A weekend in Granada, Spain, near Seville's trains.",
                       ctx, judge, suggestion=True)
    assert (verdict.grounded, verdict.stage, len(judge.calls)) == (True, "judge", 1)


FAMILY = (
    "(4 May 2023, John) I just started going to boot camps with my fam last month. It's good for bonding.\n"
    "(4 May 2023, Maria) How often do you all work out together?\n"
    "(4 May 2023, John) Three times a week, mostly early mornings."
)


def test_an_answer_of_the_wrong_kind_is_rejected() -> None:
    """A "how often" reply names a frequency; a bare name answers only a question asking for a person."""
    copied = "It's good for bonding."
    verdict = validate("How often does John work out with his family?", copied, FAMILY, None)
    assert (verdict.grounded, verdict.stage, verdict.reason) == (False, "wrong_kind", "no_frequency")
    for frequency in ("Three times a week", "Mostly early mornings", "Twice", "every weekend"):
        assert wrong_kind("How often does John work out with his family?", frequency, FAMILY) is None
    verdict = validate("How has John's fitness improved since the boot camps?", "Maria!", FAMILY, None)
    assert (verdict.grounded, verdict.stage, verdict.reason) == (False, "wrong_kind", "only_a_name")
    assert wrong_kind("Where did John go with his family?", "Maria", FAMILY) == "only_a_name"
    # A pack of John's lines alone names Maria only as the one he greets: the store's speakers count.
    johns = "(4 May 2023, John) Yeah Maria! We've had lots more energy and noticed gains in strength."
    assert wrong_kind("How has John's fitness improved since the boot camps?", "Maria", johns) is None
    assert wrong_kind("How has John's fitness improved since the boot camps?", "Maria", johns,
                      ["John", "Maria"]) == "only_a_name"
    verdict = validate("How has John's fitness improved since the boot camps?", "Maria", johns, None,
                       speakers=["John", "Maria"])
    assert (verdict.grounded, verdict.stage, verdict.reason) == (False, "wrong_kind", "only_a_name")
    assert wrong_kind("Who did John greet?", "Maria", johns, ["John", "Maria"]) is None


def test_a_date_question_answered_without_a_day_is_the_wrong_kind() -> None:
    assert wrong_kind("what date is the Dublin half marathon?", "2026", "") == "no_date"
    assert wrong_kind("what night is futsal on now?", "11 June", "") == "no_weekday"
    assert wrong_kind("what night is futsal on now?", "Thursday nights, since 11 June", "") is None
    assert wrong_kind("Which days do I go in to the office now?", "Mon, Wed and Thu", "") is None
    assert wrong_kind("What night did we see the play?", "14 March", "") is None  # one past night: a date answers
    assert wrong_kind("what date is the Dublin half marathon?", "Sunday 25 October 2026", "") is None
    assert wrong_kind("What date was the party?", "On the 5th.", "") is None
    assert wrong_kind("what date is the race?", "Sometime in March 2026", "") is None  # a month: the best the notes may give
    assert wrong_kind("which day is bin day?", "Tuesday", "") is None
    assert wrong_kind("When is the race?", "2026", "") is None  # "when" may be answered with a year
    # a question asking for a person, or for a name, is answered by one
    assert wrong_kind("Who asked John about his workouts?", "Maria", FAMILY) is None
    assert wrong_kind("Which friend asked John about his workouts?", "Maria", FAMILY) is None
    assert wrong_kind("What is the name of John's friend?", "Maria", FAMILY) is None
    assert wrong_kind("What's the surname of John's friend?", "Maria", FAMILY) is None
    assert wrong_kind("What did John start going to?", "Boot camps", FAMILY) is None


RULES_CONTEXT = (
    "(3 March 2025, Maya) Friday afternoons are meeting-free deep-work time.\n"
    "(5 March 2025, Maya) Wednesday evenings are pottery, so don't put anything after 6 on a Wednesday.\n"
    "(9 March 2025, Maya) budget for the night, £200"
)


def test_a_verdict_quoting_a_rule_about_something_else_is_refused() -> None:
    question = "Tariq asked for a design review this Friday at 3pm, is that ok?"
    off = "No — Wednesday evenings are pottery, so don't put anything after 6 on a Wednesday."
    assert not rule_governs(question, off)
    verdict = validate(question, off, RULES_CONTEXT, None)
    assert (verdict.grounded, verdict.stage, verdict.reason) == (False, "rule_verdict", "off_question")
    on = "No — Friday afternoons are meeting-free deep-work time."
    assert validate(question, on, RULES_CONTEXT, None).grounded
    # a verdict made in code compares amounts, which need share no word with the rule
    priced = 'No — £240 is over the limit: "budget for the night, £200"'
    assert not rule_governs("Is a £240 dinner OK for the anniversary?", priced)
    assert validate("Is a £240 dinner OK for the anniversary?", priced, RULES_CONTEXT, None, ruled=True).grounded


def test_a_model_verdict_quoting_a_rule_the_context_marks_outdated_is_refused() -> None:
    context = (
        "(3 February 2025, Maya) Wednesday evenings are pottery, so don't put anything after 6 on a Wednesday."
        " (outdated as of 22 July 2025)\n"
        "(22 July 2025, Maya) pottery changes from September: it moves to Tuesday evenings."
    )
    question = "Could I join a Wednesday 7pm book club starting in December?"
    stale = "No — Wednesday evenings are pottery, so don't put anything after 6 on a Wednesday."
    verdict = validate(question, stale, context, None)
    assert (verdict.grounded, verdict.stage, verdict.reason) == (False, "rule_verdict", "outdated_rule")
    # the same rule on a line that is not marked outdated is a rule that holds
    assert validate(question, stale, context.replace(" (outdated as of 22 July 2025)", ""), None).grounded


def test_the_assistant_is_no_answer_about_the_users_life() -> None:
    from edgemem.recall.validator import wrong_kind

    ctx = "(1 December 2025, Gloria) Nelida starts monday\n(1 December 2025, Assistant) Noted: Nelida starts Monday."
    assert wrong_kind("Who looks after Papá on weekday mornings now?", "Assistant", ctx) == "the_assistant"
    assert wrong_kind("what car do i drive these days", "The assistant suggests driving a 2004 Mazda.", ctx) == (
        "the_assistant")
    assert wrong_kind("what did you say about my car?", "The assistant said it needs a WoF.", ctx) is None
    assert wrong_kind("Who looks after Papá now?", "Nelida", ctx) is None
    assert wrong_kind("What car does Ana drive?", "A Model 3", ctx) is None


def test_a_sum_of_money_asked_and_answered_in_another_unit_is_the_wrong_kind() -> None:
    asked = "Gunnar put up his crane fee, what does he charge for a lift now?"
    assert wrong_kind(asked, "10 kg", "") == "no_money"
    assert wrong_kind(asked, "1 500 kroner", "") is None
    assert wrong_kind(asked, "1500", "") is None  # a bare number may be money
    assert wrong_kind("How much did I pay for the 10 kg bag?", "R300", "") is None
    assert wrong_kind("How far did I run?", "10 km", "") is None  # no money asked


def test_a_phone_number_or_address_asked_and_none_given_is_the_wrong_kind() -> None:
    # The move was told, the new number or address never was: what the model lifts from the move's
    # line is no phone number (digits) and no address (a house, flat or postcode number).
    assert wrong_kind("What's Marta's new phone number in Cork?", "Noted", "") == "no_phone_number"
    assert wrong_kind("Noriko got a new phone number when she moved to Fukuoka, what is it?",
                      "Noriko got a new phone number when she moved to Fukuoka.", "") == "no_phone_number"
    assert wrong_kind("emeka's number?", "Emeka", "") == "no_phone_number"
    assert wrong_kind("whats bisi's new address after the wedding?", "Ibadan", "") == "no_address"
    assert wrong_kind("What is Caroline's email address?", "her work one", "") == "no_email"
    # Given, the detail is of the kind asked, however it is grouped or written.
    assert wrong_kind("emeka's number?", "0812 330 6651", "") is None
    assert wrong_kind("can u remind me what my phone number is, i always forget the new one", "0412 558 903", "") is None
    assert wrong_kind("whats my address now", "Flat 3B, 14 Palm Grove Close, Lekki Phase 1", "") is None
    assert wrong_kind("What is Caroline's email address?", "caro.m@example.org", "") is None
    # Not asked what the detail is: a yes/no, a device, a count, a room number, where someone lives.
    assert wrong_kind("Did Ines change her phone number too?", "Yes", "") is None
    assert wrong_kind("can you tell me if my phone number changed?", "No, it's the same one.", "") is None
    assert wrong_kind("what phone am I using now?", "An iPhone 15", "") is None
    assert wrong_kind("How many times did Tom change his number?", "3", "") is None
    assert wrong_kind("What's my room number at the hotel?", "Room 12", "") is None
    assert wrong_kind("What's my number for the race on Sunday?", "412", "") is None  # a bib
    assert wrong_kind("whats her new number now", "not given yet", "") == "no_phone_number"
    assert wrong_kind("Where does Noor live now?", "Sherbrooke", "") is None
