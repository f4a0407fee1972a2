"""mcp-watch: one health cycle over the MCP servers of agent-config/mcp.json.

Reference, "Watching the MCP connections": every 10 minutes (cron) each server is polled and
a no-op tool is called. When that fails: (1) a silent token refresh; (2) if the refresh fails,
a DM "<server> MCP needs reauth" with the fix; (3) after DISCONNECT_CONFIRM_THRESHOLD failed
cycles in a row, a :warning: reaction on the most recent ticket. "An expired token gets
mistaken for 'the agent is dumb today'": this loop is what says "token expired" out loud.

State per server lives in ``$HARNESS_HOME/mcp-watch.json`` so each outage is told once: one
DM, one reaction, and one "healthy again" when it ends (which clears the record).

Where the :warning: goes: the ticket itself when its support channel is in
``outbound_allowlist`` (the operator opted in); otherwise the ticket's case thread in the
self-DM — the operator's mirror of that ticket — so the allowlist is never widened behind the
operator's back. With no ticket at all, the reaction marks the reauth DM itself.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness_cli import clock, paths
from harness_cli.config import Config, McpServer, Thresholds
from harness_cli.errors import ConfigError, HarnessError
from harness_cli.logs import event
from harness_cli.ops.mcp_probe import Probe, probe_all
from harness_cli.outbox import notify
from harness_cli.outbox.outbound import Outbound
from harness_cli.state import files
from harness_cli.state.locks import hold
from harness_cli.state.store import JsonFile

log = logging.getLogger("harness.system.mcp_watch")

DISCONNECT_CONFIRM_THRESHOLD = Thresholds().mcp_disconnect_confirm
"""The reference's default; the rule and its number live in harness.yaml's thresholds
(``mcp_disconnect_confirm``), counted in failed cycles."""
REFRESH_TIMEOUT_S = 120.0
"""The silent refresh is a script (token endpoint, credential helper); a hung one fails."""
IDP_EXPIRED_EXIT = 77
"""``refresh_command`` exits 77 (sysexits EX_NOPERM) when the identity-provider session itself
expired: only a human can renew it, and the DM carries the runbook."""
WARNING = "warning"


class Warned(BaseModel):
    model_config = ConfigDict(extra="allow")
    channel: str
    ts: str
    where: str
    """``ticket``, ``case_thread`` or ``reauth_dm``."""


class ServerHealth(BaseModel):
    """One server's record. Empty (all defaults) means healthy and nothing owed."""

    model_config = ConfigDict(extra="allow")
    failures: int = 0
    """Failed cycles in a row (after the refresh was tried)."""
    failing_since: datetime | None = None
    last_checked: datetime | None = None
    last_ok: datetime | None = None
    last_error: str = ""
    http_status: int | None = None
    dm_ts: str = ""
    """The reauth DM of this outage (sent once); the recovery note is threaded under it."""
    idp_expired: bool = False
    warning: Warned | None = None
    """The :warning: of this outage (placed once)."""


class McpWatchState(BaseModel):
    """``$HARNESS_HOME/mcp-watch.json``."""

    model_config = ConfigDict(extra="allow")
    schema_version: int = 1
    servers: dict[str, ServerHealth] = Field(default_factory=dict)


def state_file() -> JsonFile[McpWatchState]:
    return JsonFile(paths.state_file("mcp-watch.json"), McpWatchState)


@dataclass
class Refresh:
    code: int
    output: str = ""

    @property
    def needs_human(self) -> bool:
        return self.code == IDP_EXPIRED_EXIT


def run_refresh(command: str) -> Refresh:
    """Run the silent refresh; its output is kept for the log, never shown on a terminal."""
    try:
        proc = subprocess.run(
            ["/bin/sh", "-c", command],
            capture_output=True,
            text=True,
            timeout=REFRESH_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return Refresh(-1, f"timed out after {REFRESH_TIMEOUT_S:g} s")
    return Refresh(proc.returncode, (proc.stdout + proc.stderr).strip()[-300:])


@dataclass
class ServerReport:
    name: str
    state: str
    """``healthy``, ``refreshed``, ``failing`` or ``recovered``."""
    detail: str = ""
    actions: list[str] = field(default_factory=list)


@dataclass
class WatchReport:
    servers: list[ServerReport] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class Watch:
    cfg: Config
    out: Outbound
    probe: Callable[[dict[str, McpServer]], dict[str, Probe]] = probe_all
    refresh: Callable[[str], Refresh] = run_refresh


def run_cycle(watch: Watch) -> WatchReport:
    """One cycle. Healthy servers cost nothing but the check; each outage is told once."""
    servers = watch.cfg.mcp.mcpServers
    _check_projects(watch.cfg)
    report = WatchReport()
    with hold("mcp-watch", timeout=0, what="mcp-watch"):
        handle = state_file()
        state = handle.read()
        for gone in set(state.servers) - set(servers):
            del state.servers[gone]
        first = watch.probe(dict(servers)) if servers else {}
        refreshed: dict[str, Refresh] = {}
        for name, found in first.items():
            command = servers[name].refresh_command
            if not found.ok and command:
                done = refreshed[name] = watch.refresh(command)
                # A refresh that worked may print the new token: only a failure's output is kept.
                event(
                    log,
                    "mcp_refresh",
                    logging.INFO if done.code == 0 else logging.WARNING,
                    server=name,
                    exit_code=done.code,
                    output="" if done.code == 0 else done.output,
                )
        again = [n for n, r in refreshed.items() if r.code == 0]
        final = {**first, **(watch.probe({n: servers[n] for n in again}) if again else {})}
        cycle = _Cycle(watch, report)
        for name, found in final.items():
            health = state.servers.setdefault(name, ServerHealth())
            report.servers.append(
                cycle.settle(name, servers[name], found, refreshed.get(name), health)
            )
            if report.servers[-1].state != "failing":
                state.servers.pop(name, None)  # recovery clears the record
            handle.write(state)  # after each server: a crash never repeats a DM already sent
        failing = [s.name for s in report.servers if s.state == "failing"]
        event(log, "mcp_watch_cycle", servers=len(servers), failing=failing)
    return report


@dataclass
class _Cycle:
    watch: Watch
    report: WatchReport

    def settle(
        self,
        name: str,
        server: McpServer,
        found: Probe,
        refresh: Refresh | None,
        health: ServerHealth,
    ) -> ServerReport:
        if found.ok:
            return self._healthy(ServerReport(name, "healthy", found.line()), refresh, health)
        now = clock.now()
        health.failures += 1
        health.failing_since = health.failing_since or now
        health.last_checked, health.last_error = now, found.line()
        health.http_status = found.http_status
        health.idp_expired = health.idp_expired or bool(refresh and refresh.needs_human)
        detail = found.line() + (f"; refresh exited {refresh.code}" if refresh else "")
        row = ServerReport(name, "failing", detail)
        event(
            log,
            "mcp_unhealthy",
            logging.WARNING,
            server=name,
            failures=health.failures,
            error=found.line(),
            http_status=found.http_status,
        )
        if not health.dm_ts:
            health.dm_ts = self._tell(row, server, found, refresh, health)
        confirm = self.watch.cfg.harness.thresholds.mcp_disconnect_confirm
        if health.failures >= confirm and health.warning is None:
            health.warning = self._warn(row, server, health)
        return row

    def _healthy(
        self, row: ServerReport, refresh: Refresh | None, health: ServerHealth
    ) -> ServerReport:
        told = bool(health.dm_ts or health.warning)
        if health.failures or told:
            row.state = "recovered"
            event(log, "mcp_recovered", server=row.name, after_failures=health.failures)
            if told:
                self._try(
                    row,
                    "said it is healthy again",
                    notify.mcp_recovered,
                    self.watch.out,
                    self.watch.cfg,
                    server=row.name,
                    thread_ts=health.dm_ts or None,
                )
        elif refresh is not None:
            row.state = "refreshed"
            row.actions.append("token refreshed silently")
            event(log, "mcp_token_refreshed", server=row.name)
        return row

    def _tell(
        self,
        row: ServerReport,
        server: McpServer,
        found: Probe,
        refresh: Refresh | None,
        health: ServerHealth,
    ) -> str:
        """The one DM of this outage; empty when Slack refused (tried again next cycle)."""
        out, cfg = self.watch.out, self.watch.cfg
        if health.idp_expired:
            return self._try(
                row,
                "DMed: identity-provider session expired",
                notify.idp_expired,
                out,
                cfg,
                what=f"{row.name} MCP",
                runbook=server.runbook,
            )
        return self._try(
            row,
            "DMed the operator",
            notify.mcp_needs_reauth,
            out,
            cfg,
            server=row.name,
            fix=fix_for(row.name, server, refresh),
            detail=row.detail,
            auth=found.auth_failed or found.stage == "call_tool",
        )

    def _warn(self, row: ServerReport, server: McpServer, health: ServerHealth) -> Warned | None:
        target = warning_target(self.watch.cfg, self.watch.out, server, health.dm_ts)
        if target is None:
            row.actions.append("no ticket to mark with :warning:")
            return None
        done = f":warning: on the {target.where}"
        if not self._try(row, done, self.watch.out.react, target.channel, target.ts, WARNING):
            return None
        event(
            log,
            "mcp_warning_reaction",
            logging.WARNING,
            server=row.name,
            channel=target.channel,
            ts=target.ts,
            where=target.where,
        )
        return target

    def _try(
        self, row: ServerReport, done: str, action: Callable[..., object], *a: Any, **kw: Any
    ) -> str:
        """One Slack action: its ts (or "done"), or "" when it failed — reported, and tried
        again next cycle, never fatal to the cycle."""
        try:
            result = action(*a, **kw)
        except HarnessError as exc:
            self.report.errors.append(f"{row.name}: {exc.line()}")
            return ""
        row.actions.append(done)
        return result if isinstance(result, str) and result else "done"


def fix_for(name: str, server: McpServer, refresh: Refresh | None) -> str:
    if server.runbook.strip():
        return server.runbook.strip()
    where = (
        f"renew the token its headers use in agent-config/mcp.json (entry {name!r})"
        if server.url
        else f"renew the credentials its env uses in agent-config/mcp.json (entry {name!r})"
    )
    tried = f" (the silent refresh exited {refresh.code})" if refresh else ""
    return f"re-authenticate it: `claude mcp` → {name} → Authenticate, or {where}{tried}."


def warning_target(cfg: Config, out: Outbound, server: McpServer, dm_ts: str) -> Warned | None:
    """The most recent ticket of the server's project (or of any project) — see the module
    docstring for where its mark lands."""
    tickets = [
        t
        for handle in (files.oncall_thread_map(), files.task_thread_map())
        for t in handle.read().threads.values()
        if t.role == "ticket"
        and not t.evicted
        and (server.project is None or t.project == server.project)
    ]
    latest = max(tickets, key=lambda t: float(t.thread_ts), default=None)
    if latest is not None and latest.channel in out.allowlist:
        return Warned(channel=latest.channel, ts=latest.thread_ts, where="ticket")
    mirror = notify.case_thread(latest.case_id) if latest is not None else None
    if mirror is not None and mirror.channel in out.allowlist:
        return Warned(channel=mirror.channel, ts=mirror.thread_ts, where="case_thread")
    if dm_ts:
        return Warned(channel=cfg.harness.operator.self_dm_channel, ts=dm_ts, where="reauth_dm")
    return None


def _check_projects(cfg: Config) -> None:
    for name, server in cfg.mcp.mcpServers.items():
        if server.project is not None and server.project not in cfg.projects.projects:
            raise ConfigError(
                f"{cfg.dir / 'mcp.json'}: mcpServers.{name}.project: no project "
                f"{server.project!r} in projects.yaml",
                hint=f"one of: {', '.join(cfg.projects.projects)}",
            )
