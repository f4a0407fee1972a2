"""mcp-watch against real MCP servers built with the SDK (tests/ops/mcp_server.py), the real
MCP client, and the Slack emulator through the harness's own Slack client.

The story of one outage: healthy (silent) → the token expires (401) → the silent refresh is
tried and fails → one DM → a second failed cycle → exactly one :warning: → more failed cycles
add nothing → the refresh works again → "healthy again", once, and the record is cleared.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.config import McpServer
from harness_cli.ops.mcp_probe import probe
from harness_cli.ops.mcp_watch import DISCONNECT_CONFIRM_THRESHOLD, state_file
from tests.conftest import REPO
from tests.ops.mcp_server import HttpMcpServer, Idp

SERVER_SCRIPT = Path(__file__).with_name("mcp_server.py")
# The SDK's FastMCP settings model warns about itself at import; nothing the harness does.
pytestmark = pytest.mark.filterwarnings("ignore:Field 'lifespan' has an incomplete definition")


@pytest.fixture
def idp(tmp_path: Path) -> Idp:
    return Idp.create(tmp_path / "idp")


@pytest.fixture
def http_server(idp: Idp) -> Iterator[HttpMcpServer]:
    with HttpMcpServer(tokens=idp.tokens) as server:
        yield server


def http_entry(server: HttpMcpServer, idp: Idp, **extra: Any) -> dict[str, Any]:
    return {
        "type": "http",
        "url": server.url,
        "headersHelper": idp.helper_command(),
        "noop_tool": "ping",
        "refresh_command": idp.refresh_command(),
        **extra,
    }


def stdio_entry(**env: str) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [str(SERVER_SCRIPT), "stdio"],
        "env": env,
        "noop_tool": "ping",
    }


def write_mcp(config_dir: Path, servers: dict[str, Any]) -> None:
    (config_dir / "mcp.json").write_text(json.dumps({"mcpServers": servers}))


def watch(cli: Any) -> dict[str, Any]:
    code, out, err = cli("mcp-watch", "--json")
    assert code == 0, err
    result = json.loads(out)
    return {s["name"]: s for s in result["data"]["servers"]}


def dm_messages(slack: Any) -> Any:
    return slack.messages("D0SELF")


def open_ticket(cli: Any, slack: Any, text: str) -> Any:
    """A real ticket through intake: the support post, its case and its case thread."""
    ticket = slack.post_as("C0SUPPORT", "U0CUSTOMER", text)
    code, _, err = cli("poll-slack")
    assert code == 0, err
    return ticket


def test_healthy_servers_cost_a_check_and_nothing_else(
    cli: Any, harness_ready: Path, slack_emu: Any, http_server: HttpMcpServer, idp: Idp,
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    calls = tmp_path / "calls.log"
    monkeypatch.setenv("MCP_TEST_CALLS", str(calls))
    write_mcp(
        harness_ready,
        {"remote": http_entry(http_server, idp), "local": stdio_entry(MCP_TEST_CALLS=str(calls))},
    )
    for _ in range(2):
        rows = watch(cli)
        assert {n: r["state"] for n, r in rows.items()} == {
            "remote": "healthy",
            "local": "healthy",
        }
    assert calls.read_text().splitlines() == ["ping"] * 4  # the no-op tool really ran
    assert slack_emu.calls("chat.postMessage") == 0
    assert slack_emu.calls("reactions.add") == 0
    assert idp.refreshes() == 0
    assert state_file().read().servers == {}


def test_an_expired_token_is_refreshed_then_told_once_then_marked_once_then_cleared(
    cli: Any, harness_ready: Path, slack_emu: Any, http_server: HttpMcpServer, idp: Idp,
) -> None:  # fmt: skip
    write_mcp(harness_ready, {"atlassian": http_entry(http_server, idp)})
    ticket = open_ticket(cli, slack_emu, "AAA-7 the export button does nothing")
    [case_thread] = dm_messages(slack_emu)
    posts_before = slack_emu.calls("chat.postMessage")
    assert watch(cli)["atlassian"]["state"] == "healthy"

    idp.expire_all()  # the token expires; the refresh will fail (mode "fail")
    row = watch(cli)["atlassian"]
    assert row["state"] == "failing" and "HTTP 401" in row["detail"]
    assert idp.refreshes() == 1
    dms = [m for m in dm_messages(slack_emu) if m["ts"] != case_thread["ts"]]
    [reauth] = dms
    assert reauth["text"].startswith(":electric_plug: atlassian MCP needs reauth")
    assert "Fix:" in reauth["text"] and "thread_ts" not in reauth
    assert slack_emu.calls("reactions.add") == 0  # one failure is not yet a disconnect
    health = state_file().read().servers["atlassian"]
    assert health.failures == 1 and health.http_status == 401 and health.dm_ts == reauth["ts"]

    for cycle in range(DISCONNECT_CONFIRM_THRESHOLD, DISCONNECT_CONFIRM_THRESHOLD + 3):
        assert watch(cli)["atlassian"]["state"] == "failing"
        assert idp.refreshes() == cycle
    assert slack_emu.calls("chat.postMessage") == posts_before + 1  # still the one DM
    assert slack_emu.calls("reactions.add") == 1  # exactly one :warning:
    # the ticket's support channel is outside the allowlist: the mark lands on its case
    # thread in the self-DM, never in the team channel
    marked = next(m for m in dm_messages(slack_emu) if m["ts"] == case_thread["ts"])
    assert marked["reactions"][0]["name"] == "warning"
    assert "reactions" not in next(
        m for m in slack_emu.messages("C0SUPPORT") if m["ts"] == ticket["ts"]
    )

    idp.mode("ok")  # a working refresh mints a new token
    row = watch(cli)["atlassian"]
    assert row["state"] == "recovered"
    recovered = dm_messages(slack_emu)[-1]
    assert recovered["text"].startswith(":white_check_mark: atlassian MCP is healthy again")
    assert recovered["thread_ts"] == reauth["ts"]
    assert state_file().read().servers == {}
    posts = slack_emu.calls("chat.postMessage")
    assert watch(cli)["atlassian"]["state"] == "healthy"
    assert slack_emu.calls("chat.postMessage") == posts  # said once


def test_a_silent_refresh_fixes_it_without_a_word(
    cli: Any, harness_ready: Path, slack_emu: Any, http_server: HttpMcpServer, idp: Idp,
) -> None:  # fmt: skip
    write_mcp(harness_ready, {"gitlab": http_entry(http_server, idp)})
    idp.expire_all()
    idp.mode("ok")
    row = watch(cli)["gitlab"]
    assert row["state"] == "refreshed" and row["actions"] == ["token refreshed silently"]
    assert idp.refreshes() == 1
    assert slack_emu.calls("chat.postMessage") == 0
    assert state_file().read().servers == {}


def test_an_expired_identity_provider_session_gets_the_runbook_and_no_ticket_means_the_dm(
    cli: Any, harness_ready: Path, slack_emu: Any, idp: Idp,
) -> None:  # fmt: skip
    """Over stdio there is no status code: the no-op tool fails. The refresh says the IdP
    session itself expired (exit 77): the DM carries the runbook from mcp.json."""
    idp.mode("idp")
    runbook = "1. okta-login --hw-key\n2. approve the push on your key"
    entry = stdio_entry(MCP_TEST_TOKENS=str(idp.tokens), MCP_TEST_TOKEN="old-token")
    write_mcp(
        harness_ready,
        {"datadog": {**entry, "refresh_command": idp.refresh_command(), "runbook": runbook}},
    )
    row = watch(cli)["datadog"]
    assert row["state"] == "failing" and "token expired" in row["detail"]
    [dm] = dm_messages(slack_emu)
    assert dm["text"].startswith(":key: Identity-provider session expired (datadog MCP)")
    assert runbook in dm["text"]
    watch(cli)
    assert slack_emu.calls("chat.postMessage") == 1
    # no ticket anywhere: the :warning: marks the DM itself
    [dm] = dm_messages(slack_emu)
    assert [r["name"] for r in dm["reactions"]] == ["warning"]


def test_a_ticket_channel_the_operator_allowed_gets_the_mark_itself(
    cli: Any, harness_ready: Path, slack_emu: Any, http_server: HttpMcpServer, idp: Idp,
) -> None:  # fmt: skip
    config = harness_ready / "harness.yaml"
    config.write_text(
        config.read_text().replace(
            "outbound_allowlist: [D0SELF]", "outbound_allowlist: [D0SELF, C0SUPPORT]"
        )
    )
    write_mcp(harness_ready, {"slack": http_entry(http_server, idp, project="team-a")})
    open_ticket(cli, slack_emu, "AAA-8 first")
    newest = open_ticket(cli, slack_emu, "AAA-9 second")
    idp.expire_all()
    for _ in range(DISCONNECT_CONFIRM_THRESHOLD):
        watch(cli)
    marked = [m for m in slack_emu.messages("C0SUPPORT") if m.get("reactions")]
    assert [m["ts"] for m in marked] == [newest["ts"]]


def test_an_unknown_project_is_a_config_error(cli: Any, harness_ready: Path) -> None:
    write_mcp(harness_ready, {"x": {**stdio_entry(), "project": "nope"}})
    code, _, err = cli("mcp-watch")
    assert code == 2 and "mcpServers.x.project" in err


def test_the_probe_reads_the_401_off_the_wire(http_server: HttpMcpServer, idp: Idp) -> None:
    idp.expire_all()
    server = McpServer(type="http", url=http_server.url, headers={"Authorization": "Bearer x"})
    found = probe("s", server, timeout=10)
    assert not found.ok and found.auth_failed and found.stage == "initialize"
    assert 'error="invalid_token"' in found.www_authenticate


def test_an_unset_variable_fails_the_check_with_its_name() -> None:
    server = McpServer(url="http://127.0.0.1:9/mcp", headers={"X": "${HARNESS_TEST_UNSET_VAR}"})
    found = probe("s", server, timeout=5)
    assert not found.ok and found.stage == "config"
    assert "HARNESS_TEST_UNSET_VAR" in found.detail


EVERYTHING = REPO / ".tools/mcp-everything/node_modules/.bin/mcp-server-everything"


def _everything() -> str | None:
    import os

    found = os.environ.get("HARNESS_MCP_EVERYTHING_BIN") or (
        str(EVERYTHING) if EVERYTHING.exists() else shutil.which("mcp-server-everything")
    )
    return found if found and shutil.which("node") else None


@pytest.mark.skipif(
    _everything() is None,
    reason="@modelcontextprotocol/server-everything is not installed (never downloaded at test "
    "time): `npm install --prefix .tools/mcp-everything @modelcontextprotocol/server-everything`",
)
def test_the_reference_everything_server_is_healthy(
    cli: Any, harness_ready: Path, slack_emu: Any
) -> None:
    entry = {"command": _everything(), "args": ["stdio"], "noop_tool": "echo"}
    write_mcp(harness_ready, {"everything": {**entry, "noop_args": {"message": "ping"}}})
    row = watch(cli)["everything"]
    assert row["state"] == "healthy", row["detail"]
    assert slack_emu.calls("chat.postMessage") == 0
