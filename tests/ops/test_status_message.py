"""The live status message: a run's events move one placeholder in the case thread through
its statuses, with a bounded number of chat.update calls, against the Slack emulator through
the harness's own Slack client and Outbound."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness_cli import wiring
from harness_cli.config import load_config
from harness_cli.errors import ServiceError
from harness_cli.loop.runs import CaseRunner
from harness_cli.ops.status_message import MIN_EDIT_INTERVAL_S, StatusReporter, for_case
from harness_cli.sandbox.httpbase import Fault, Request
from harness_cli.services.runtime import RunEvent, RunRequest, RunResult, Usage

THREAD_TS = "1700000000.000100"


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class ScriptedRuntime:
    """Plays a fixed list of live events (as a runtime emits them), advancing the clock."""

    events: list[tuple[str, dict[str, Any]]]
    clock: Clock
    step_s: float = 0.5
    stop: str = "end_turn"
    name: str = "scripted"
    seen: list[RunRequest] = field(default_factory=list)

    def run(self, req: RunRequest) -> RunResult:
        self.seen.append(req)
        for kind, data in self.events:
            self.clock.now += self.step_s
            req.emit(kind, **data)  # type: ignore[arg-type]
        text = "" if self.stop == "error" else "done"
        return RunResult(text=text, stop=self.stop, usage=Usage(input=10, output=5))  # type: ignore[arg-type]


def tool(name: str, path: str = "") -> tuple[str, dict[str, Any]]:
    return "tool_use", {"id": "t", "name": name, "input": {"file_path": path} if path else {}}


def chatty_run() -> list[tuple[str, dict[str, Any]]]:
    """200 events: TASK.md, a long search, a patch, with text and usage in between."""
    events: list[tuple[str, dict[str, Any]]] = [("init", {"session_id": "s1"})]
    events += [tool("Read", "/case/TASK.md"), ("text", {"text": "reading"})] * 10
    events += [tool(n, "src/x.py") for n in ("Grep", "Read", "Glob")] * 40
    events += [("usage", {"input": 100, "output": 20})] * 9
    events += [tool("Edit", "src/x.py"), ("text", {"text": "patching"})] * 30
    return events[:200]


@pytest.fixture
def out(slack_emu: Any, config_dir: Path) -> Any:
    cfg = load_config(config_dir)
    return wiring.outbound(cfg)


def updates(slack_emu: Any) -> list[str]:
    return [
        str(Request(r.method, r.path, r.query, r.headers, r.body).arg("text"))
        for r in slack_emu.recorded("/api/chat.update")
    ]


def reporter(out: Any, clock: Callable[[], float]) -> StatusReporter:
    return StatusReporter(out, "D0SELF", THREAD_TS, title="investigate AAA-1", clock=clock)


def test_a_200_event_run_makes_one_message_and_a_bounded_number_of_edits(
    slack_emu: Any, out: Any, config_dir: Path, tmp_path: Path
) -> None:
    clock = Clock()
    events = chatty_run()
    assert len(events) == 200
    runtime = ScriptedRuntime(events, clock)
    status = reporter(out, clock)
    runner = CaseRunner(runtime, load_config(config_dir), tmp_path, status=status)

    assert runner("investigator", "look") == "done"
    status.done("exit=complete")

    [placeholder] = slack_emu.messages("D0SELF")
    assert placeholder["thread_ts"] == THREAD_TS
    texts = updates(slack_emu)
    run_seconds = len(events) * runtime.step_s
    assert len(texts) <= run_seconds / MIN_EDIT_INTERVAL_S + 1  # + the closing edit
    assert slack_emu.calls("chat.postMessage") == 1
    shown = [t.rsplit(": ", 1)[-1] for t in texts]
    order = ["Reading TASK.md", "Searching codebase", "Drafting patch"]
    assert [s for s in order if s in shown] == order  # every stage showed, in order
    assert all(a != b for a, b in itertools.pairwise(texts))  # edits only on change
    assert placeholder["text"].startswith(":white_check_mark: investigate AAA-1: Done")
    assert "exit=complete" in placeholder["text"] and "tokens" in placeholder["text"]
    assert placeholder["text"] == texts[-1]
    assert runtime.seen[0].on_event is not None


def test_a_chatty_run_in_real_time_costs_the_post_and_the_closing_edit(
    slack_emu: Any, out: Any
) -> None:
    status = StatusReporter(out, "D0SELF", THREAD_TS, title="dev-agent task AAA-1")
    status.start("dev-agent")
    for kind, data in chatty_run():
        status.event(RunEvent(kind, data))  # type: ignore[arg-type]
    status.done()
    assert slack_emu.calls("chat.postMessage") == 1
    assert slack_emu.calls("chat.update") == 1
    assert slack_emu.messages("D0SELF")[0]["text"].startswith(":white_check_mark:")


def test_a_429_on_an_edit_waits_it_out_and_never_fails_the_run(slack_emu: Any, out: Any) -> None:
    clock = Clock()
    status = reporter(out, clock)
    status.start("investigator")
    slack_emu.add_fault(
        Fault("status", match="chat.update", status=429, headers={"Retry-After": "30"})
    )
    clock.now += 10
    status.event(RunEvent("tool_use", {"name": "Grep", "input": {}}))  # the 429
    assert slack_emu.calls("chat.update") == 1
    for name in ("Edit", "Grep"):
        clock.now += 10  # inside the 30 s the 429 asked for: no call at all
        status.event(RunEvent("tool_use", {"name": name, "input": {}}))
    assert slack_emu.calls("chat.update") == 1
    clock.now += 10  # the 30 s are over
    status.event(RunEvent("tool_use", {"name": "Edit", "input": {}}))
    assert slack_emu.calls("chat.update") == 2
    status.failed("the investigator run failed: timeout")
    [message] = slack_emu.messages("D0SELF")
    assert message["text"].startswith(
        ":x: investigate AAA-1: Failed: the investigator run failed: timeout"
    )


def test_a_failed_model_call_closes_nothing_itself_and_the_workflow_says_why(
    slack_emu: Any, out: Any, config_dir: Path, tmp_path: Path
) -> None:
    clock = Clock()
    runtime = ScriptedRuntime([tool("Read", "/c/TASK.md")], clock, stop="error")
    status = reporter(out, clock)
    # The outage backoffs (5 s doubling to 60 s) are not waited for real: 135 s of the
    # suite. The scripted clock stands still meanwhile, as it did while they were waited.
    runner = CaseRunner(runtime, load_config(config_dir), tmp_path, status=status,
                        sleep=lambda _seconds: None)  # fmt: skip
    with pytest.raises(ServiceError) as caught:
        runner("investigator", "look")
    status.failed(caught.value.message)
    status.done("too late: the message is closed")
    [message] = slack_emu.messages("D0SELF")
    assert message["text"].startswith(":x: investigate AAA-1: Failed: the investigator run")
    assert slack_emu.calls("chat.update") == 1


def test_a_slack_failure_silences_the_reporter_not_the_run(slack_emu: Any, out: Any) -> None:
    slack_emu.add_fault(Fault("status", match="chat.postMessage", status=500, times=-1))
    status = reporter(out, Clock())
    status.start("investigator")
    status.event(RunEvent("tool_use", {"name": "Edit", "input": {}}))
    status.done()
    assert slack_emu.calls("chat.update") == 0
    assert status.quiet


def test_retries_are_logged_and_the_status_says_so(
    slack_emu: Any, out: Any, config_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    retry = ("retry", {"attempt": 1, "max_retries": 10, "error_status": 529, "retry_delay_ms": 500})
    runtime = ScriptedRuntime([retry], clock, step_s=10)
    status = reporter(out, clock)
    runner = CaseRunner(runtime, load_config(config_dir), tmp_path, status=status)
    with caplog.at_level(logging.INFO, logger="harness"):
        runner("investigator", "look")
    [logged] = [r for r in caplog.records if r.getMessage() == "model_retry"]
    assert logged.fields["error_status"] == 529 and logged.fields["role"] == "investigator"  # type: ignore[attr-defined]
    assert "Waiting for the model API" in updates(slack_emu)[-1]


def test_no_case_thread_means_no_placeholder(config_dir: Path, out: Any) -> None:
    assert for_case(load_config(config_dir), out, "AAA-404", "investigate AAA-404") is None
