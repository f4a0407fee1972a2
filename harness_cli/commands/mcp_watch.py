"""harness mcp-watch — one health cycle over the MCP servers in agent-config/mcp.json (cron:
every 10 minutes). Exit 0 when the cycle ran, whatever it found — an unhealthy server is
reported to the operator in Slack, not through cron mail; 1 when Slack refused to carry a DM
or a reaction (retried next cycle); 3 when another cycle still runs."""

from __future__ import annotations

from harness_cli import wiring
from harness_cli.commands import new_app
from harness_cli.config import load_config
from harness_cli.ops.mcp_watch import Watch, run_cycle
from harness_cli.output import emit
from harness_cli.result import Result

app = new_app("One health cycle over the MCP servers in mcp.json.")


@app.command()
def mcp_watch() -> None:
    """Check each server (initialize, list tools, call its no-op tool); on failure try the
    silent refresh, DM the operator once, and mark the most recent ticket after 2 failures."""
    from dataclasses import asdict

    cfg = load_config()
    result = Result("mcp-watch", columns=["server", "state", "detail", "actions"])
    if not cfg.mcp.mcpServers:
        result.skipped.append(f"no MCP servers in {cfg.dir / 'mcp.json'}")
        result.data = {"servers": []}
        emit(result)
        return
    report = run_cycle(Watch(cfg, wiring.outbound(cfg, wiring.lazy_slack())))
    result.data = {"servers": [asdict(s) for s in report.servers]}
    result.rows = [[s.name, s.state, s.detail, "; ".join(s.actions)] for s in report.servers]
    result.errors.extend(report.errors)
    result.exit_code = 1 if report.errors else 0
    emit(result)
