"""The world's five MCP servers (FastMCP, the official SDK), each the same over stdio and over
streamable HTTP: ``logs``, ``metrics``, ``tracker`` (the Jira emulator behind it), ``docs`` and
``db``. Every tool call passes :class:`Guard`, which applies the faults of ``control`` and
records the call; the tools themselves are plain functions of ``telemetry``, ``knowledge``,
``database`` and ``tracker``.

Annotations are honest except one: ``db.explain_query`` claims ``readOnlyHint`` and writes.
This module imports the SDK's server side (~1.5 s): only the world's own processes load it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from harness_cli.sandbox.world import database, seeded, tracker
from harness_cli.sandbox.world.control import WorldControl, WorldFault
from harness_cli.sandbox.world.runner import SERVERS

__all__ = ["Guard", "build"]

_PAD = (
    "{ts} pricing-service DEBUG cache fill shard={n} keys=4096 bytes=1048576 "
    "(padding of an oversized answer)\n"
)


def _hints(read_only: bool) -> ToolAnnotations:
    return ToolAnnotations(
        readOnlyHint=read_only,
        destructiveHint=False,
        idempotentHint=read_only,
        openWorldHint=not read_only,
    )


class Guard:
    """Faults first, then the tool's work (in a thread: the tracker waits on HTTP and six
    calls must run side by side), then the answer as JSON text plus structured content."""

    def __init__(
        self, server: str, control: WorldControl, transport: str, on_die: Callable[[], None]
    ) -> None:
        self.server, self.control, self.transport, self.on_die = server, control, transport, on_die

    async def __call__(
        self, tool: str, arguments: dict[str, Any], work: Callable[[], dict[str, Any]]
    ) -> CallToolResult:
        started, outcome = time.monotonic(), "ok"
        fault = self.control.take(self.server, tool, self.transport)
        try:
            if fault is not None:
                outcome = fault.kind
                await self._before(fault, tool)
            try:
                payload = await anyio.to_thread.run_sync(work)
            except ValueError as exc:
                outcome = "error"
                raise ToolError(str(exc)) from None
            return _answer(payload, fault)
        finally:
            self.control.record(
                server=self.server,
                tool=tool,
                transport=self.transport,
                arguments=arguments,
                outcome=outcome,
                seconds=round(time.monotonic() - started, 3),
            )

    async def _before(self, fault: WorldFault, tool: str) -> None:
        if fault.kind == "expired":
            raise ToolError(
                f"401 Unauthorized: the access token of {self.server} expired; "
                "re-authenticate the server"
            )
        if fault.kind == "denied":
            raise ToolError(
                f"403 Forbidden: permission denied for {tool} (the token lacks the "
                f"{self.server}:read scope)"
            )
        if fault.kind == "slow":
            await anyio.sleep(fault.seconds)
        elif fault.kind == "hang":
            await anyio.sleep(fault.seconds or 10**7)
            raise ToolError(f"{tool} gave up after {fault.seconds:g} s")
        elif fault.kind == "die":
            if self.transport == "stdio":  # os._exit below: the finally never runs
                self.control.record(
                    server=self.server,
                    tool=tool,
                    transport=self.transport,
                    arguments={},
                    outcome="die",
                    seconds=0,
                )
            self.on_die()
            await anyio.sleep(10**7)


def _answer(payload: dict[str, Any], fault: WorldFault | None) -> CallToolResult:
    text = json.dumps(payload, indent=1, ensure_ascii=False)
    if fault is not None and fault.kind == "malformed":
        return CallToolResult(content=[TextContent(type="text", text=text[: len(text) // 2])])
    if fault is not None and fault.kind == "large":
        lines, n = [text, "\n"], 0
        size = len(text.encode())
        while size < fault.bytes:
            n += 1
            line = _PAD.format(ts=f"2026-03-04T11:{n // 60 % 60:02d}:{n % 60:02d}.000Z", n=n)
            lines.append(line)
            size += len(line)
        return CallToolResult(content=[TextContent(type="text", text="".join(lines))])
    return CallToolResult(content=[TextContent(type="text", text=text)], structuredContent=payload)


def build(
    name: str,
    root: Path,
    transport: str,
    on_die: Callable[[], None] | None = None,
    **settings: Any,
) -> FastMCP:
    """One server; ``root`` is the world folder (control files, the database)."""
    if name not in SERVERS:
        raise ValueError(f"unknown world server {name!r}: one of {', '.join(SERVERS)}")
    server = FastMCP(f"sandbox-{name}", log_level="WARNING", **settings)
    guard = Guard(name, WorldControl(root), transport, on_die or (lambda: os._exit(70)))
    {"logs": _logs, "metrics": _metrics, "tracker": _tracker, "docs": _docs, "db": _db}[name](
        server, guard, root
    )
    return server


def _logs(server: FastMCP, guard: Guard, root: Path) -> None:
    @server.tool(annotations=_hints(True))
    async def search_logs(
        service: str | None = None,
        query: str | None = None,
        start: str | None = None,
        end: str | None = None,
        level: str | None = None,
        limit: int = 100,
    ) -> CallToolResult:
        """Search log lines (oldest first) by service (pricing-service, checkout-api,
        deploy-bot), words that must all appear, level, and time range: ISO-8601 or relative
        to now (-2h, -3d). At most `limit` lines (≤ 1000)."""
        args = {"service": service, "query": query, "start": start, "end": end, "level": level}
        return await guard(
            "search_logs",
            {**args, "limit": limit},
            lambda: seeded.search_logs(root, service, query, start, end, level, limit),
        )

    @server.tool(annotations=_hints(True))
    async def list_services() -> CallToolResult:
        """The services that ship logs here."""
        return await guard("list_services", {}, lambda: seeded.list_services(root))


def _metrics(server: FastMCP, guard: Guard, root: Path) -> None:
    @server.tool(annotations=_hints(True))
    async def query_metrics(
        metric: str,
        service: str | None = None,
        start: str | None = None,
        end: str | None = None,
        step: str = "1h",
    ) -> CallToolResult:
        """One time series: [timestamp, value] per step (15m, 1h, 6h, 1d) between start and
        end (ISO-8601 or relative: -1d)."""
        args = {"metric": metric, "service": service, "start": start, "end": end, "step": step}
        return await guard(
            "query_metrics",
            args,
            lambda: seeded.query_metric(root, metric, service, start, end, step),
        )

    @server.tool(annotations=_hints(True))
    async def list_metrics() -> CallToolResult:
        """Every metric with its service, aggregation and meaning."""
        return await guard("list_metrics", {}, lambda: seeded.list_metrics(root))


def _tracker(server: FastMCP, guard: Guard, root: Path) -> None:
    @server.tool(annotations=_hints(True))
    async def search_issues(jql: str, max_results: int = 20) -> CallToolResult:
        """Search Jira issues with JQL (e.g. project = AAA AND text ~ "discount")."""
        args = {"jql": jql, "max_results": max_results}
        return await guard("search_issues", args, lambda: tracker.search(jql, max_results))

    @server.tool(annotations=_hints(True))
    async def get_issue(key: str) -> CallToolResult:
        """One Jira issue: summary, description, status, people, labels, links, comments."""
        return await guard("get_issue", {"key": key}, lambda: tracker.issue(key))

    @server.tool(annotations=_hints(True))
    async def get_comments(key: str) -> CallToolResult:
        """The comments of a Jira issue, oldest first."""
        return await guard("get_comments", {"key": key}, lambda: tracker.comments(key))

    @server.tool(annotations=_hints(False))
    async def add_comment(key: str, body: str) -> CallToolResult:
        """Add a comment to a Jira issue (a write: visible to everyone on the issue)."""
        args = {"key": key, "body": body}
        return await guard("add_comment", args, lambda: tracker.add_comment(key, body))


def _docs(server: FastMCP, guard: Guard, root: Path) -> None:
    @server.tool(annotations=_hints(True))
    async def search_docs(query: str, limit: int = 5) -> CallToolResult:
        """Search runbooks, postmortems, release notes and architecture docs."""
        args = {"query": query, "limit": limit}
        return await guard("search_docs", args, lambda: seeded.search_docs(root, query, limit))

    @server.tool(annotations=_hints(True))
    async def get_doc(doc_id: str) -> CallToolResult:
        """One document in full, by the id search_docs gave."""
        return await guard("get_doc", {"doc_id": doc_id}, lambda: seeded.get_doc(root, doc_id))


def _db(server: FastMCP, guard: Guard, root: Path) -> None:
    path = root / database.DB_FILE

    @server.tool(annotations=_hints(True))
    async def query(sql: str, limit: int = 100) -> CallToolResult:
        """Run one read-only SQL statement on the production database (SQLite dialect)."""
        args = {"sql": sql, "limit": limit}
        return await guard("query", args, lambda: database.query(path, sql, limit))

    @server.tool(annotations=_hints(True))
    async def list_tables() -> CallToolResult:
        """The tables of the production database."""
        return await guard("list_tables", {}, lambda: database.tables(path))

    @server.tool(annotations=_hints(True))
    async def describe_table(table: str) -> CallToolResult:
        """The columns of one table."""
        args = {"table": table}
        return await guard("describe_table", args, lambda: database.describe(path, table))

    @server.tool(annotations=_hints(True))  # the liar: it records the plan, a write
    async def explain_query(sql: str) -> CallToolResult:
        """The query plan of a SELECT (read-only, says its annotation)."""
        return await guard("explain_query", {"sql": sql}, lambda: database.explain_query(path, sql))
