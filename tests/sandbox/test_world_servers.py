"""The sandbox's production world: its five MCP servers driven through the official MCP client
SDK over streamable HTTP and stdio, the incident they tell, and every fault on demand.

One world (the HTTP host child) and one Jira emulator serve the whole module."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import anyio
import httpx
import pytest
from atlassian import Jira
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from harness_cli.agents.mcp_servers import describe
from harness_cli.commands.sandbox import CONTROL_API
from harness_cli.config import McpConfig
from harness_cli.ops.mcp_probe import probe, probe_all
from harness_cli.sandbox.jira_api import SANDBOX_TOKEN, SANDBOX_USER, JiraEmulator
from harness_cli.sandbox.world import database
from harness_cli.sandbox.world.knowledge import jira_seed
from harness_cli.sandbox.world.runner import HOST_TOKEN, SERVERS, World

pytestmark = pytest.mark.filterwarnings("ignore:Field 'lifespan' has an incomplete definition")


@pytest.fixture(scope="module")
def jira() -> Iterator[JiraEmulator]:
    emu = JiraEmulator()
    emu.start()
    emu.control("seed", jira_seed())
    yield emu
    emu.stop()


@pytest.fixture(scope="module")
def world(jira: JiraEmulator, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    env = {"JIRA_URL": jira.url, "JIRA_USER": SANDBOX_USER, "JIRA_TOKEN": SANDBOX_TOKEN}
    with World(tmp_path_factory.mktemp("world"), env) as running:
        running.wait_ready()
        yield running


@pytest.fixture(autouse=True)
def no_faults(world: World) -> Iterator[None]:
    world.act("reset")
    yield
    world.clear_faults()


@asynccontextmanager
async def http_session(world: World, name: str, read_s: float = 20) -> AsyncIterator[ClientSession]:
    client = httpx.AsyncClient(headers={"Authorization": f"Bearer {HOST_TOKEN}"}, timeout=30)
    async with (
        client,
        streamable_http_client(world.url(name), http_client=client) as (read, write, _),
        ClientSession(read, write, read_timeout_seconds=timedelta(seconds=read_s)) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def stdio_session(world: World, name: str) -> AsyncIterator[ClientSession]:
    entry = world.stdio_entry(name)
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env=entry.get("env")
    )
    with open(world.root / f"stdio-{name}.log", "a") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=timedelta(seconds=20)) as session,
        ):
            await session.initialize()
            yield session


def text(result: CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def call(
    world: World, name: str, tool: str, args: dict[str, Any], read_s: float = 20
) -> CallToolResult:
    async def run() -> CallToolResult:
        async with http_session(world, name, read_s) as session:
            return await session.call_tool(tool, args)

    return anyio.run(run)


def test_every_server_lists_its_tools_with_annotations(world: World) -> None:
    async def run() -> dict[str, dict[str, Any]]:
        found = {}
        for name in SERVERS:
            async with http_session(world, name) as session:
                for tool in (await session.list_tools()).tools:
                    found[f"{name}.{tool.name}"] = tool.annotations
        return found

    tools = anyio.run(run)
    assert set(tools) == {
        "logs.search_logs",
        "logs.list_services",
        "metrics.query_metrics",
        "metrics.list_metrics",
        "tracker.search_issues",
        "tracker.get_issue",
        "tracker.get_comments",
        "tracker.add_comment",
        "docs.search_docs",
        "docs.get_doc",
        "db.query",
        "db.list_tables",
        "db.describe_table",
        "db.explain_query",
    }
    writes = {n for n, a in tools.items() if not a.readOnlyHint}
    assert writes == {"tracker.add_comment"}
    assert tools["tracker.add_comment"].idempotentHint is False
    assert all(a.destructiveHint is False for a in tools.values())
    # the liar claims what the honest read tools claim
    assert tools["db.explain_query"] == tools["db.query"]


@pytest.mark.parametrize(
    ("server", "tool", "args", "evidence"),
    [
        (
            "logs",
            "search_logs",
            {"service": "checkout-api", "query": "price mismatch", "limit": 1},
            "ORD-20260302-0100 quoted=45.00 charged=50.00 qty=10",
        ),
        (
            "logs",
            "search_logs",
            {"service": "deploy-bot", "start": "2026-03-02T00:00:00Z", "end": "-2d"},
            "pricing-service v2.3.0 commit=4f2a9c1",
        ),
        (
            "metrics",
            "query_metrics",
            {"metric": "checkout.price_mismatch", "step": "1d"},
            '"2026-03-01T00:00:00.000Z",\n   0.0',
        ),
        ("tracker", "get_issue", {"key": "AAA-101"}, "ORD-20260302-0100"),
        ("tracker", "search_issues", {"jql": 'project = AAA AND text ~ "threshold"'}, "AAA-87"),
        ("docs", "search_docs", {"query": "bulk discount threshold inclusive"}, "RB-PRICING"),
        (
            "db",
            "query",
            {"sql": "SELECT version, deployed_at FROM deploys WHERE ticket = 'AAA-87'"},
            "2026-03-02T09:14:00Z",
        ),
    ],
)
def test_each_source_tells_the_incident(
    world: World, server: str, tool: str, args: dict[str, Any], evidence: str
) -> None:
    result = call(world, server, tool, args)
    assert not result.isError, text(result)
    assert evidence in text(result)
    assert result.structuredContent is not None  # JSON text and structured content agree
    assert json.loads(text(result)) == result.structuredContent
    (logged,) = world.calls(server)
    assert logged["tool"] == tool and logged["transport"] == "http" and logged["outcome"] == "ok"


def test_the_metrics_show_the_drop_at_the_deploy(world: World) -> None:
    def daily(metric: str) -> list[float]:
        result = call(world, "metrics", "query_metrics", {"metric": metric, "step": "1d"})
        return [value for _, value in json.loads(text(result))["points"]]

    applied, eligible = (
        daily("pricing.bulk_discount.applied"),
        daily("pricing.order_lines.bulk_eligible"),
    )
    assert applied[0] == eligible[0]  # before the deploy every eligible line got it
    assert applied[2] < eligible[2] * 0.7  # after it, the 10-unit lines do not


def test_the_database_refuses_writes_and_the_liar_writes_anyway(world: World) -> None:
    refused = call(world, "db", "query", {"sql": "DELETE FROM orders"})
    assert refused.isError and "read-only" in text(refused)
    path = world.root / database.DB_FILE
    with sqlite3.connect(path) as db:
        before = db.execute("SELECT count(*) FROM plan_cache").fetchone()[0]
    lied = call(world, "db", "explain_query", {"sql": "SELECT * FROM orders WHERE id = 'x'"})
    assert not lied.isError and "SEARCH orders" in text(lied)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM plan_cache").fetchone()[0] == before + 1


def test_the_tracker_sees_rest_comments_and_writes_through_rest(
    world: World, jira: JiraEmulator
) -> None:
    client = Jira(jira.url, username=SANDBOX_USER, password=SANDBOX_TOKEN, cloud=True, timeout=5)
    client.issue_add_comment("AAA-102", "Redis pool resized; watching.")
    seen = call(world, "tracker", "get_comments", {"key": "AAA-102"})
    assert "Redis pool resized; watching." in text(seen)
    wrote = call(world, "tracker", "add_comment", {"key": "AAA-102", "body": "From the tracker."})
    assert not wrote.isError
    bodies = [c["body"] for c in client.issue_get_comments("AAA-102")["comments"]]
    assert bodies[-1] == "From the tracker."
    missing = call(world, "tracker", "get_issue", {"key": "AAA-999"})
    assert missing.isError and "Jira answered 404" in text(missing)
    jira.control("fault", {"kind": "status", "status": 429, "match": "/issue/AAA-101"})
    limited = call(world, "tracker", "get_issue", {"key": "AAA-101"})
    assert limited.isError and "429" in text(limited) and "retry after 1 s" in text(limited)


def test_faults_over_http(world: World) -> None:
    world.fault("expired", "logs", times=-1)
    found = probe("logs", McpConfig.model_validate(world.mcp_config()).mcpServers["logs"])
    assert found.http_status == 401 and "invalid_token" in found.www_authenticate
    world.clear_faults()
    world.fault("denied", "logs", tool="search_logs")
    denied = call(world, "logs", "search_logs", {"query": "redis"})
    assert denied.isError and "403 Forbidden: permission denied" in text(denied)
    world.fault("malformed", "docs")
    broken = call(world, "docs", "search_docs", {"query": "runbook"})
    assert not broken.isError
    with pytest.raises(json.JSONDecodeError):
        json.loads(text(broken))
    world.fault("large", "logs", bytes=300_000)
    assert len(text(call(world, "logs", "list_services", {}))) >= 300_000
    world.fault("slow", "metrics", seconds=0.5)
    started = time.monotonic()
    call(world, "metrics", "list_metrics", {})
    assert time.monotonic() - started >= 0.5

    async def hung() -> None:
        async with http_session(world, "docs", read_s=1) as session:
            await session.call_tool("get_doc", {"doc_id": "RB-PRICING"})

    world.fault("hang", "docs", seconds=30)
    started = time.monotonic()
    with pytest.raises(BaseException) as timed_out:
        anyio.run(hung)
    assert "Timed out" in describe(timed_out.value)
    assert time.monotonic() - started < 10


def test_a_server_that_dies_mid_call_and_comes_back(world: World) -> None:
    world.fault("die", "metrics", tool="list_metrics")
    # the SDK's HTTP client notices a dropped stream only by its read timeout
    with pytest.raises(BaseException) as dropped:
        call(world, "metrics", "list_metrics", {}, read_s=2)
    # the dropped stream shows as the read timeout (or, timing permitting, the drop itself)
    assert any(
        w in describe(dropped.value) for w in ("Timed out", "RemoteProtocolError", "ReadError")
    )
    assert world.act("state")["servers"]["metrics"]["alive"] is False
    with pytest.raises(BaseException) as refused:
        call(world, "metrics", "list_metrics", {}, read_s=2)
    assert "ConnectError" in describe(refused.value)
    assert world.act("state")["servers"]["logs"]["alive"] is True  # only that one died
    world.act("revive", {"server": "metrics"})
    assert not call(world, "metrics", "list_metrics", {}).isError


def test_faults_over_stdio_through_the_control_folder(world: World) -> None:
    # the control folder is plain JSON a human (or a test in another language) can write
    faults = world.root / "control" / "faults.json"
    faults.write_text(json.dumps([{"kind": "expired", "server": "docs", "tool": "search_docs"}]))

    async def run() -> list[CallToolResult]:
        out = []
        async with stdio_session(world, "docs") as session:
            out.append(await session.call_tool("search_docs", {"query": "bulk"}))
            for kind in ("denied", "malformed"):
                world.fault(kind, "docs", transport="stdio")
                out.append(await session.call_tool("search_docs", {"query": "bulk"}))
            world.fault("large", "docs", bytes=100_000)
            out.append(await session.call_tool("get_doc", {"doc_id": "RB-PRICING"}))
            world.fault("die", "docs")
            with pytest.raises(Exception):  # noqa: B017 - the process is gone
                await session.call_tool("get_doc", {"doc_id": "RB-PRICING"})
        return out

    expired, denied, malformed, large = anyio.run(run)
    assert len(text(large)) >= 100_000 and json.loads(faults.read_text()) == []
    assert expired.isError and "401 Unauthorized" in text(expired) and "expired" in text(expired)
    assert denied.isError and "403 Forbidden" in text(denied)
    with pytest.raises(json.JSONDecodeError):
        json.loads(text(malformed))
    outcomes = [(c["transport"], c["outcome"]) for c in world.calls("docs")]
    assert outcomes == [
        ("stdio", "expired"),
        ("stdio", "denied"),
        ("stdio", "malformed"),
        ("stdio", "large"),
        ("stdio", "die"),
    ]


def test_six_slow_reads_run_side_by_side(world: World) -> None:
    world.fault("slow", "logs", seconds=1, times=6)

    async def run() -> float:
        async with http_session(world, "logs") as session:
            started = time.monotonic()
            async with anyio.create_task_group() as group:
                for n in range(6):
                    group.start_soon(session.call_tool, "search_logs", {"query": f"ORD {n}"})
            return time.monotonic() - started

    assert anyio.run(run) < 2.5  # one at a time would be 6 s


def test_mcp_json_reaches_every_server_and_every_documented_action_exists(world: World) -> None:
    config = McpConfig.model_validate(world.mcp_config())
    assert {n for n, s in config.mcpServers.items() if s.command} == {"docs", "db"}
    checked = probe_all(config.mcpServers, timeout=60)
    assert all(p.ok for p in checked.values()), {n: p.line() for n, p in checked.items()}
    (actions,) = [a for who, a in CONTROL_API.items() if who.startswith("MCP world")]
    for action in re.findall(r"(?:^|, )([a-z_]+)", re.sub(r"\{[^}]*\}", "", actions.split(";")[0])):
        body = {"kind": "slow", "server": "docs", "times": 0} if action == "fault" else {}
        if action in ("die", "revive"):
            body = {"server": "db"}
        assert isinstance(world.act(action, body), dict), action
    world.act("revive", {"server": "db"})
