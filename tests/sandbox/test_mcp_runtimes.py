"""One MCP catalog on both runtimes: the real claude CLI and the harness's own loop (the real
anthropic SDK, the real MCP SDK as client) investigate against the sandbox world's servers
(FastMCP, stdio and streamable HTTP), scripted by the Anthropic emulator (``mcp_world.yaml``).

What is checked is what reached the emulator (the model's side), what the world recorded (the
server's side) and which processes are left — never a mock's say-so."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.agents.anthropic_loop import AnthropicRuntime
from harness_cli.agents.factory import build_runtime
from harness_cli.agents.mcp_settings import McpSettings
from harness_cli.bounds import InputBounds
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.world.runner import STDIO_BY_DEFAULT, World
from harness_cli.services.claude_cli import find_claude
from harness_cli.services.runtime import RunRequest

pytestmark = pytest.mark.filterwarnings("ignore:Field 'lifespan' has an incomplete definition")

SCRIPT = "mcp_world"
CLI_MARKS = [
    pytest.mark.claude_cli,
    pytest.mark.slow,
    pytest.mark.skipif(find_claude() is None, reason="claude CLI not found: run `make claude-cli`"),
]
RUNTIMES = [pytest.param("claude-code", marks=CLI_MARKS), "anthropic"]
TRUSTED = McpSettings(trusted=["logs", "metrics", "docs", "db"], timeout_s=20)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with World(tmp_path_factory.mktemp("world")) as running:
        running.wait_ready()
        yield running


@pytest.fixture(autouse=True)
def no_faults(world: World) -> Iterator[None]:
    world.clear_faults()
    world.act("reset")
    yield
    world.clear_faults()


@pytest.fixture(scope="module")
def server() -> Iterator[AnthropicEmulator]:
    emulator = AnthropicEmulator(SCRIPT)
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture
def emu(
    server: AnthropicEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AnthropicEmulator:
    server.reset()
    server.load_script(SCRIPT)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-mcp")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    return server


@pytest.fixture
def case(tmp_path: Path) -> Path:
    folder = tmp_path / "case"
    folder.mkdir()
    (folder / "message.json").write_text('{"text": "bulk discount missing at 10 units"}\n')
    return folder


def request(case: Path, world: World, script_role: str, **overrides: Any) -> RunRequest:
    # docs and db over stdio, the rest over HTTP, on both runtimes (``World.mcp_config``)
    config = world.write_mcp_config(case.parent / "mcp.json", stdio=STDIO_BY_DEFAULT)
    fields: dict[str, Any] = {
        "prompt": f"[harness-role: {script_role}] investigate",
        "workdir": case,
        "allowed_root": case,
        "mcp_config": config,
        "max_turns": 6,
        "timeout_s": 120,
    }
    return RunRequest(role="investigator", **{**fields, **overrides})


def offered(emu: AnthropicEmulator) -> set[str]:
    bodies = [r.json_body() for r in emu.recorded("/v1/messages")]
    return {t["name"] for b in bodies if b and b.get("tools") for t in b["tools"]}


def tool_results(emu: AnthropicEmulator) -> list[dict[str, Any]]:
    """Every tool_result block the model was sent, its content as one text."""
    found: dict[str, dict[str, Any]] = {}
    for r in emu.recorded("/v1/messages"):
        body = r.json_body() or {}
        for message in body.get("messages", []):
            if message.get("role") != "user" or not isinstance(message.get("content"), list):
                continue
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    content = block.get("content")
                    if isinstance(content, list):
                        content = "".join(c.get("text", "") for c in content)
                    found[block["tool_use_id"]] = {**block, "content": str(content)}
    return list(found.values())


def world_processes(world: World) -> list[int]:
    """stdio servers of this world still alive (their command line names its folder)."""
    alive = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
        except (OSError, IndexError):
            continue
        if b"stdio" in cmd and str(world.root).encode() in cmd and state != "Z":
            alive.append(int(pid))
    return alive


def gone(world: World, within: float = 10.0) -> bool:
    end = time.monotonic() + within
    while world_processes(world) and time.monotonic() < end:
        time.sleep(0.2)
    return not world_processes(world)


# -- both runtimes ----------------------------------------------------------------------------


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_configured_server_is_queried_and_its_answer_reaches_the_model(
    runtime: str, world: World, emu: AnthropicEmulator, case: Path
) -> None:
    result = build_runtime(runtime, mcp=TRUSTED).run(request(case, world, "mcp-read"))

    assert result.stop == "end_turn", result.error
    assert result.text == "The logs answered."
    assert "mcp__logs__search_logs" in offered(emu)
    assert [c["tool"] for c in world.calls("logs")] == ["search_logs"]
    results = tool_results(emu)
    assert results and "pricing-service" in results[0]["content"]
    assert [t.name for t in result.tool_events] == ["mcp__logs__search_logs"]
    assert gone(world), "a stdio server outlived the run"


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_untrusted_annotations_are_ignored(
    runtime: str, world: World, emu: AnthropicEmulator, case: Path
) -> None:
    """No server trusted, nothing declared: every tool is a write, so an investigation is
    offered none of them — even the ones whose server says readOnlyHint."""
    result = build_runtime(runtime, mcp=McpSettings()).run(request(case, world, "mcp-read"))
    assert result.text == "No logs tool was offered."
    assert not {n for n in offered(emu) if n.startswith("mcp__")}
    assert world.calls("logs") == []

    # The operator's word opens one server; the db's lying explain_query, declared a write,
    # stays out even though the db is trusted and its annotation says read-only.
    emu.reset()
    settings = McpSettings(
        trusted=["db"], effects={"logs/*": "read-only", "db/explain_query": "writes"}
    )
    result = build_runtime(runtime, mcp=settings).run(request(case, world, "mcp-read"))
    assert result.text == "The logs answered."
    names = {n for n in offered(emu) if n.startswith("mcp__")}
    if runtime == "anthropic":  # the CLI declares its MCP tools lazily; the deny list is shown
        assert "mcp__db__query" in names and "mcp__db__explain_query" not in names
        assert not {n for n in names if n.startswith(("mcp__metrics", "mcp__docs"))}
    assert "mcp__tracker__add_comment" not in names


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_denied_source_falls_back_to_the_docs_and_the_denial_is_a_real_error(
    runtime: str, world: World, emu: AnthropicEmulator, case: Path
) -> None:
    world.fault("denied", "logs", times=-1)
    result = build_runtime(runtime, mcp=TRUSTED).run(request(case, world, "mcp-fallback"))

    assert result.text == "Logs were denied; the runbook in the docs answered instead."
    names = [(t.name, t.is_error) for t in result.tool_events]
    assert names == [("mcp__logs__search_logs", True), ("mcp__docs__search_docs", False)]
    assert "403" in result.tool_events[0].output
    assert [c["outcome"] for c in world.calls("logs")] == ["denied"]


# -- the harness's own loop ---------------------------------------------------------------


def test_six_read_calls_of_one_turn_run_concurrently(
    world: World, emu: AnthropicEmulator, case: Path
) -> None:
    world.fault("slow", "metrics", tool="query_metrics", seconds=1.0, times=6)
    runtime = AnthropicRuntime(mcp_settings=TRUSTED)
    result = runtime.run(request(case, world, "mcp-parallel"))

    assert result.text == "Six series read.", result.error
    events = result.tool_events
    assert len(events) == 6 and not any(e.is_error for e in events)
    span = max(e.ended for e in events) - min(e.started for e in events)
    assert span < 3.0, f"six 1 s reads took {span:.1f} s: they ran one after another"
    assert [c["outcome"] for c in world.calls("metrics")] == ["slow"] * 6


def test_a_hung_server_is_bounded_by_the_timeout_and_stopped_with_the_run(
    world: World, emu: AnthropicEmulator, case: Path
) -> None:
    world.fault("hang", "db", times=-1)
    runtime = AnthropicRuntime(mcp_settings=McpSettings(trusted=["db"], timeout_s=2))
    started = time.monotonic()
    result = runtime.run(request(case, world, "mcp-hang"))
    took = time.monotonic() - started

    assert result.text == "The database call came back (or timed out).", result.error
    [call] = result.tool_events
    assert call.is_error and "timed out after 2 s" in call.output
    assert took < 30
    assert gone(world), "the hung stdio server outlived the run"


def test_a_server_that_dies_mid_run_is_a_tool_error_and_the_run_goes_on(
    world: World, emu: AnthropicEmulator, case: Path
) -> None:
    world.fault("die", "docs", transport="stdio")
    runtime = AnthropicRuntime(mcp_settings=TRUSTED)
    result = runtime.run(request(case, world, "mcp-twice"))

    assert result.stop == "end_turn", result.error
    assert result.text == "Done after two docs calls."
    assert [(t.name, t.is_error) for t in result.tool_events] == [
        ("mcp__docs__search_docs", True),
        ("mcp__docs__search_docs", True),
    ]
    assert gone(world)


def test_an_answer_over_the_cap_is_cut_while_read(
    world: World, emu: AnthropicEmulator, case: Path
) -> None:
    """5 MB of logs over HTTP with a 20 kB cap: the model gets the head and a note; the
    run's process never held the answer (its peak memory barely moves)."""
    import resource

    world.fault("large", "logs", bytes=5_000_000)
    cap = InputBounds(mcp_result_bytes=20_000).mcp_result_bytes
    runtime = AnthropicRuntime(mcp_settings=TRUSTED, mcp_result_bytes=cap)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = runtime.run(request(case, world, "mcp-read"))
    grew_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before

    assert result.text == "The logs answered.", result.error
    [text] = [r["content"] for r in tool_results(emu)]
    assert text.startswith("[answer cut at 20000 bytes")
    assert len(text) < 20_000
    assert grew_kb < 4_000, f"peak memory grew {grew_kb} kB for a 5 MB answer"


def test_reviewers_get_no_mcp(world: World, emu: AnthropicEmulator, case: Path) -> None:
    req = request(case, world, "mcp-read")
    req = RunRequest(**{**vars(req), "role": "adversarial-reviewer"})
    result = AnthropicRuntime(mcp_settings=TRUSTED).run(req)
    assert result.text == "No logs tool was offered."
    assert not {n for n in offered(emu) if n.startswith("mcp__")}


def test_the_catalog_is_logged(world: World, emu: AnthropicEmulator, case: Path) -> None:
    runtime = AnthropicRuntime(mcp_settings=McpSettings(trusted=["logs"]))
    runtime.run(request(case, world, "mcp-read"))
    hub = runtime.last_hub
    assert hub is not None and not hub.failed
    effects = {t.policy.name: (t.policy.effect, t.policy.why) for t in hub.tools}
    assert effects["mcp__logs__search_logs"] == ("read-only", "annotation")
    assert effects["mcp__db__explain_query"] == ("writes", "untrusted")
    assert json.dumps(effects)
