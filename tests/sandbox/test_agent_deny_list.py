"""ONE deny list for every agent run (ARCHITECTURE seam 4, #14 p13), on the real claude CLI with
a real MCP server named ``slack`` offering a read tool and a write tool: the dev-agent-side
runs (push heal here) are never offered the Slack write tools — not from the user's own claude
config, not from an MCP config the harness passes — while the read tool stays usable."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_cli.agents.claude_code import ClaudeCodeRuntime
from harness_cli.agents.mcp_settings import McpSettings
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.services.claude_cli import find_claude
from harness_cli.services.runtime import RunRequest

pytestmark = [
    pytest.mark.claude_cli,
    pytest.mark.slow,
    pytest.mark.skipif(find_claude() is None, reason="claude CLI not found"),
]

SERVER = '''
from mcp.server.fastmcp import FastMCP

server = FastMCP("slack")


@server.tool()
def send_message_to_self(text: str) -> str:
    """Post a message to the operator's self-DM."""
    return "sent"


@server.tool()
def search_messages(query: str) -> str:
    """Search the workspace's messages."""
    return "nothing found"


server.run("stdio")
'''


@pytest.fixture
def emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AnthropicEmulator]:
    emulator = AnthropicEmulator("runtimes", variables={"sibling": str(tmp_path / "sibling")})
    emulator.start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", emulator.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-deny-list")
    yield emulator
    emulator.stop()


def mcp_config(tmp_path: Path) -> dict[str, object]:
    script = tmp_path / "slack_mcp.py"
    script.write_text(SERVER)
    return {"mcpServers": {"slack": {"command": sys.executable, "args": [str(script)]}}}


def offered(emu: AnthropicEmulator) -> set[str]:
    bodies = [r.json_body() for r in emu.recorded("/v1/messages")]
    return {t["name"] for b in bodies if b and b.get("tools") for t in b["tools"]}


def run(
    emu: AnthropicEmulator,
    workdir: Path,
    mcp: Path | None = None,
    settings: McpSettings | None = None,
) -> set[str]:
    emu.reset()
    req = RunRequest(
        role="push-healer",
        prompt="[harness-role: rt-loop] go",
        workdir=workdir,
        allowed_root=workdir,
        max_turns=1,
        mcp_config=mcp,
    )
    ClaudeCodeRuntime(mcp_settings=settings).run(req)
    return offered(emu)


def test_no_agent_run_is_offered_the_slack_write_tools(
    emu: AnthropicEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    config = mcp_config(tmp_path)
    # the operator's own claude config carries a Slack server: the harness's runs ignore it
    for user_config in (home / ".claude.json", home / ".claude" / ".claude.json"):
        user_config.write_text(json.dumps(config))
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("status: draft\n")

    tools = run(emu, work)
    assert tools and "Bash" in tools
    assert not any(t.startswith("mcp__") for t in tools), sorted(tools)

    # an MCP config the harness passes, every tool of it declared read-only by the operator:
    # its read tool is offered, the Slack write tool never (no declaration lifts that rule)
    passed = tmp_path / "mcp.json"
    passed.write_text(json.dumps(config))
    declared = McpSettings(effects={"slack/*": "read-only"})
    tools = run(emu, work, passed, declared)
    assert "mcp__slack__search_messages" in tools, sorted(tools)
    assert "mcp__slack__send_message_to_self" not in tools
    # undeclared and untrusted, the read tool is a write too: not offered to this role
    tools = run(emu, work, passed)
    assert not any(t.startswith("mcp__") for t in tools), sorted(tools)
    assert os.environ["HOME"] == str(home)
