"""Both runtimes — the real claude CLI and the harness's own loop over the real anthropic SDK —
play the same scripted scenarios against the Anthropic emulator (``scripts/runtimes.yaml``).

What is checked is what reached the disk and what reached the emulator, never a mock's say-so.
"""

from __future__ import annotations

import dataclasses
import stat
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.agents import tools
from harness_cli.agents.anthropic_loop import AnthropicRuntime
from harness_cli.agents.factory import build_runtime
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.httpbase import Fault
from harness_cli.services.claude_cli import find_claude
from harness_cli.services.runtime import RunEvent, RunRequest

SCRIPT = "runtimes"
CLI_MARKS = [
    pytest.mark.claude_cli,
    pytest.mark.slow,
    pytest.mark.skipif(find_claude() is None, reason="claude CLI not found: run `make claude-cli`"),
]
RUNTIMES = [pytest.param("claude-code", marks=CLI_MARKS), "anthropic"]
MESSAGE = '{"text": "the original ticket"}\n'
SOP = "\n".join(
    f"SOP step {i}: check the logs, the metrics and the recent deploys." for i in range(120)
)


@pytest.fixture(scope="module")
def server() -> Iterator[AnthropicEmulator]:
    emulator = AnthropicEmulator(SCRIPT)
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture
def case(tmp_path: Path) -> Path:
    """A case dir (notes, a read-only message.json) next to a sibling dir it must not touch."""
    folder = tmp_path / "case"
    folder.mkdir()
    (folder / "notes.txt").write_text("title: runtime notes\nstatus: draft\n")
    (folder / "message.json").write_text(MESSAGE)
    (folder / "message.json").chmod(0o444)
    (tmp_path / "sibling").mkdir()
    (tmp_path / "sibling" / "keep.txt").write_text("original\n")
    return folder


def _point_at(emu: AnthropicEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    emu.load_script(SCRIPT, {"sibling": str(tmp_path / "sibling")})
    monkeypatch.setenv("ANTHROPIC_BASE_URL", emu.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-runtimes")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))  # the CLI keeps its sessions under $HOME/.claude


@pytest.fixture
def emu(
    server: AnthropicEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AnthropicEmulator:
    server.reset()
    _point_at(server, tmp_path, monkeypatch)
    return server


ROLE = "[harness-role: {}] go"
"""A prompt naming the script's role while the request's role (and so its policy) is another."""


def request(case: Path, role: str, **overrides: Any) -> RunRequest:
    fields: dict[str, Any] = {"prompt": "go", "workdir": case, "allowed_root": case}
    return RunRequest(role=role, **{**fields, **overrides})


def offered_tools(emu: AnthropicEmulator) -> list[list[str]]:
    bodies = [r.json_body() for r in emu.recorded("/v1/messages")]
    return [[t["name"] for t in b["tools"]] for b in bodies if b and b.get("tools")]


# -- both runtimes ----------------------------------------------------------------------------


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_read_write_edit_then_report(runtime: str, emu: AnthropicEmulator, case: Path) -> None:
    events: list[RunEvent] = []
    result = build_runtime(runtime).run(request(case, "rt-basic", on_event=events.append))

    assert result.stop == "end_turn", result.error
    assert result.text == "Done: read the notes, wrote report.md and closed it."
    assert (case / "report.md").read_text() == "# Report\nstatus: closed\n"
    assert [(e.name, e.is_error, e.done) for e in result.tool_events] == [
        ("Read", False, True),
        ("Write", False, True),
        ("Edit", False, True),
    ]
    assert "status: draft" in result.tool_events[0].output
    assert result.usage.input + result.usage.cache_creation + result.usage.cache_read > 0
    assert result.usage.output > 0 and result.cost_usd > 0
    assert result.session_id and result.turns == 4
    assert result.reverted == []
    assert {"init", "text", "tool_use", "tool_result", "usage"} <= {e.kind for e in events}
    assert emu.unmatched() == []
    assert [c.rule for c in emu.calls if c.tools_present] == [
        "read the notes",
        "write the report",
        "close the report",
        "report",
    ]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_disallowed_tools_are_not_offered(runtime: str, emu: AnthropicEmulator, case: Path) -> None:
    result = build_runtime(runtime).run(request(case, "rt-basic", disallowed_tools=("Bash",)))
    assert result.stop == "end_turn", result.error
    offered = offered_tools(emu)
    assert offered and all("Bash" not in names and "Read" in names for names in offered)

    emu.reset()  # the control: a role with a shell (agents/policy.py) is offered Bash
    control = request(case, "dev-agent", prompt=ROLE.format("rt-loop"), max_turns=1)
    build_runtime(runtime).run(control)
    assert all("Bash" in names for names in offered_tools(emu))

    emu.reset()  # a role the policy does not know gets no shell (fail closed)
    build_runtime(runtime).run(request(case, "rt-loop", max_turns=1))
    assert offered_tools(emu) and all("Bash" not in n for n in offered_tools(emu))


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_writes_outside_the_allowed_root_are_refused_by_the_tools_and_the_sandbox(
    runtime: str, emu: AnthropicEmulator, case: Path
) -> None:
    sibling = case.parent / "sibling"
    result = build_runtime(runtime).run(
        request(case, "dev-agent", prompt=ROLE.format("rt-outside"), protect=(sibling,))
    )

    assert result.stop == "end_turn", result.error
    assert (sibling / "keep.txt").read_text() == "original\n"
    assert not (sibling / "stray.txt").exists() and not (sibling / "newdir").exists()
    assert (case / "message.json").read_text() == MESSAGE
    assert stat.S_IMODE((case / "message.json").stat().st_mode) == 0o444
    assert result.reverted == []  # nothing got out for the guard to put back
    bash = [e for e in result.tool_events if e.name == "Bash"]
    assert len(bash) == 1 and bash[0].is_error  # the sandbox: the sibling is not even there
    rules = [c.rule for c in emu.calls if c.tools_present]
    assert rules[1] == "tamper through Bash (the write was refused)"  # both refuse the Write


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_session_resumes_with_its_history(
    runtime: str, emu: AnthropicEmulator, case: Path
) -> None:
    session = str(uuid.uuid4())
    first = build_runtime(runtime).run(request(case, "rt-basic", session_id=session, max_turns=2))
    assert first.stop == "max_turns" and first.session_id == session

    emu.reset()
    again = request(case, "rt-basic", prompt="carry on", session_id=session, resume=True)
    second = build_runtime(runtime).run(again)
    assert second.stop == "end_turn", second.error
    assert second.text == "Resumed: the earlier turns are still here."
    assert second.session_id == session
    resumed = [c for c in emu.calls if c.rule == "resumed"]
    assert resumed and resumed[0].turn >= 1


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_run_over_its_wall_clock_is_killed(
    runtime: str, tmp_path: Path, case: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its own emulator: the delayed request is still being served after the run is killed.
    slow = AnthropicEmulator(SCRIPT)
    slow.start()
    try:
        _point_at(slow, tmp_path, monkeypatch)
        slow.add_fault(Fault(kind="delay", match="/v1/messages", seconds=6.0, times=-1))
        started = time.monotonic()
        result = build_runtime(runtime).run(request(case, "rt-basic", timeout_s=1.5))
        elapsed = time.monotonic() - started
    finally:
        slow.stop()
    assert result.stop == "timeout", result
    assert 1.4 <= elapsed < 4.5
    assert not (case / "report.md").exists()


# -- the anthropic runtime's own guarantees ----------------------------------------------------


def test_a_write_outside_is_refused_before_it_runs(emu: AnthropicEmulator, case: Path) -> None:
    sibling = case.parent / "sibling"
    result = AnthropicRuntime().run(
        request(case, "dev-agent", prompt=ROLE.format("rt-outside"))  # nothing protected
    )

    assert not (sibling / "stray.txt").exists()
    write = result.tool_events[0]
    assert write.name == "Write" and write.is_error and "outside" in write.output
    second = emu.recorded("/v1/messages")[1].json_body()
    (answer,) = second["messages"][-1]["content"]
    assert answer["type"] == "tool_result" and answer["is_error"] is True
    assert (sibling / "keep.txt").read_text() == "original\n"  # unprotected, but out of the box
    assert (case / "message.json").read_text() == MESSAGE


def _timed(
    tool: tools.ToolContract, spans: list[tuple[str, float, float]], lock: threading.Lock
) -> tools.ToolContract:
    def run(ctx: tools.ToolContext, args: dict[str, Any]) -> str:
        start = time.monotonic()
        time.sleep(0.3)
        out = tool.run(ctx, args)
        with lock:
            spans.append((Path(args["file_path"]).name, start, time.monotonic()))
        return out

    return dataclasses.replace(tool, run=run)


def test_reads_of_a_turn_overlap_and_writes_take_turns(emu: AnthropicEmulator, case: Path) -> None:
    (case / "a.txt").write_text("a\n")
    (case / "b.txt").write_text("b\n")
    spans: list[tuple[str, float, float]] = []
    lock = threading.Lock()
    table = {**tools.TOOLS}
    for name in ("Read", "Write"):
        table[name] = _timed(tools.TOOLS[name], spans, lock)

    result = AnthropicRuntime(tool_table=table).run(request(case, "rt-parallel"))

    assert result.stop == "end_turn", result.error
    reads = {name: (s, e) for name, s, e in spans if name in ("a.txt", "b.txt")}
    assert max(s for s, _ in reads.values()) < min(e for _, e in reads.values())  # overlap
    writes = [(name, s, e) for name, s, e in spans if name in ("c.txt", "d.txt")]
    assert [w[0] for w in writes] == ["c.txt", "d.txt"]
    assert writes[0][2] <= writes[1][1]  # the second write began after the first ended
    assert (case / "c.txt").read_text() == "c\n" and (case / "d.txt").read_text() == "d\n"


def test_max_turns_stops_the_loop(emu: AnthropicEmulator, case: Path) -> None:
    result = AnthropicRuntime().run(request(case, "rt-loop", max_turns=3))
    assert result.stop == "max_turns" and result.turns == 3
    assert len(emu.calls) == 3 and len(result.tool_events) == 3


def test_an_overloaded_api_is_retried_then_succeeds(emu: AnthropicEmulator, case: Path) -> None:
    emu.add_fault(
        Fault(kind="status", status=529, match="/v1/messages", headers={"retry-after-ms": "20"})
    )
    result = AnthropicRuntime().run(request(case, "rt-basic"))
    assert result.stop == "end_turn", result.error
    statuses = [r.status for r in emu.recorded("/v1/messages")]
    assert statuses[0] == 529 and set(statuses[1:]) == {200}


def test_an_api_that_stays_down_ends_the_run_with_its_error(
    emu: AnthropicEmulator, case: Path
) -> None:
    emu.add_fault(
        Fault(
            kind="status",
            status=529,
            match="/v1/messages",
            times=-1,
            headers={"retry-after-ms": "20"},
        )
    )
    result = AnthropicRuntime().run(request(case, "rt-basic"))
    assert result.stop == "error" and result.error and "Overloaded" in result.error
    assert "sk-ant-test-runtimes" not in result.error
    assert len(emu.recorded("/v1/messages")) == 3  # one call and the SDK's two retries


def test_later_turns_read_the_prompt_cache(emu: AnthropicEmulator, case: Path) -> None:
    result = AnthropicRuntime().run(request(case, "rt-basic", cache_prefix=(SOP,)))
    assert result.stop == "end_turn", result.error
    reads = [c.usage["cache_read_input_tokens"] for c in emu.calls]
    assert emu.calls[0].usage["cache_creation_input_tokens"] > 0
    # Turn 2 reads the stable prefix; each later turn also the conversation before it.
    assert 0 < reads[1] < reads[2] < reads[3]
    assert result.usage.cache_read == sum(reads)


def test_events_arrive_while_the_run_goes(emu: AnthropicEmulator, case: Path) -> None:
    seen: list[tuple[str, bool]] = []
    report = case / "report.md"

    def on_event(e: RunEvent) -> None:
        seen.append((e.kind, report.exists()))

    result = AnthropicRuntime().run(request(case, "rt-basic", on_event=on_event))
    assert result.stop == "end_turn"
    uses = [exists for kind, exists in seen if kind == "tool_use"]
    assert uses == [False, False, True]  # Read and Write announced before the file existed
