"""Warming the answer prompts: every system prompt the answer agent builds is warmed, at the lowest
priority, never loading the model itself, and dropped unrun when the runtime closes."""

from __future__ import annotations

import dataclasses
import threading

from edgemem.recall import answer, tools
from edgemem.runtime.runtime import Runtime
from edgemem.runtime.scheduler import INTERACTIVE


def test_every_answer_system_prompt_is_warmed() -> None:
    pairs = answer.warm_prompts()
    warmed = {a[0]["content"] for a, _ in pairs}
    questions = ["What did I plant?", "How many days between the two trips?", "Can we meet on Friday?",
                 "How many times did I go running?", "Is it ok to order pizza tonight?"]
    for tag in answer.WARM_ORDER:
        for q in questions:
            assert answer.system_prompt(tag, q) in warmed, (tag, q)
    assert len(pairs) == len(warmed) == len(answer.WARM_ORDER) + len(tools.TAG_TOOLS) + 1
    for a, b in pairs:  # a pair differs after the system prompt only
        assert a[0] == b[0] and a[1]["content"] != b[1]["content"]
        assert a[1]["content"].split("(")[0] == b[1]["content"].split("(")[0]


class Recorder:
    """Records keep_prefix calls; ``gate`` holds the first call until it is set."""

    def __init__(self) -> None:
        self.kept: list[str] = []
        self.order: list[str] = []
        self.gate = threading.Event()

    def keep_prefix(self, a, b) -> int:
        self.gate.wait(5)
        self.kept.append(a[0]["content"])
        self.order.append("warm")
        return 7

    def close(self) -> None:
        return None


def test_warm_jobs_run_below_requests_and_are_dropped_on_close(settings) -> None:
    llm = Recorder()
    runtime = Runtime(settings, llm=llm)
    try:
        pairs = answer.warm_prompts()
        jobs = runtime.warm(pairs)
        asked = runtime._llm_sched.submit(lambda: llm.order.append("ask"), priority=INTERACTIVE)
        llm.gate.set()
        asked.result(5)
        assert [job.result(5) for job in jobs] == [7] * len(pairs)
        assert llm.kept == [a[0]["content"] for a, _ in pairs]
        assert llm.order.index("ask") <= 1  # it waited for at most the warm job already running
        # Close with warm jobs still queued: they are dropped, not run.
        llm.gate.clear()
        late = runtime.warm(pairs)
        threading.Timer(0.2, llm.gate.set).start()
    finally:
        runtime.close()
    assert len(llm.kept) <= len(pairs) + 1 and all(job.cancelled() for job in late[1:])


def test_nothing_is_warmed_without_a_prompt_cache_or_a_loaded_model(settings) -> None:
    off = Runtime(dataclasses.replace(settings, prompt_cache_mb=0), llm=Recorder())
    try:
        assert off.warm(answer.warm_prompts()) == []
    finally:
        off.close()
    unloaded = Runtime(settings)  # no model: a warm job never loads one
    try:
        assert [job.result(5) for job in unloaded.warm(answer.warm_prompts()[:2])] == [0, 0]
        assert unloaded.llm_state == "not loaded"
    finally:
        unloaded.close()
