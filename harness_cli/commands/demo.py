"""harness demo — one whole ticket on the sandbox, offline, no tokens (``--live``: on the
real model, the cost estimated first)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from harness_cli.commands import new_app
from harness_cli.errors import InputError
from harness_cli.output import OPTIONS, emit
from harness_cli.result import Result
from harness_cli.sandbox.demo import StepResult, run_demo

app = new_app("One whole ticket on the sandbox, offline.")

_MARK = {
    "done": "[green]✓[/green]",
    "failed": "[red]✗[/red]",
    "waiting": "[dim]…[/dim]",
}


@app.command()
def demo(
    keep: Path | None = typer.Option(
        None,
        "--keep",
        help="Leave everything under DIR: home, workspace, remotes, sandbox-state.json.",
        file_okay=False,
    ),
    runtime: str | None = typer.Option(
        None,
        "--runtime",
        help="claude-code or anthropic (default: claude-code when the CLI is installed).",
    ),
    forge: str = typer.Option(
        "gitlab", "--forge", help="Where the team's repository lives: gitlab or github."
    ),
    live: bool = typer.Option(
        False,
        "--live",
        help="The real model (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL) plays every role "
        "instead of the script; the cost is estimated first.",
    ),
    max_usd: float | None = typer.Option(
        None,
        "--max-usd",
        min=0.0001,
        metavar="N",
        help="--live: refuse when the estimate is over N dollars; the harness's own budgets "
        "stop the demo once it has spent N.",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="--live: print the estimate and the steps; run nothing."
    ),
) -> None:
    """Post a ticket into the sandbox's #support and drive it through every built workflow
    (with --live, on the real model: it costs what the estimate says, roughly)."""
    from rich.console import Console
    from rich.markup import escape

    if forge not in ("gitlab", "github"):
        raise InputError(f"--forge {forge!r} is not a forge", hint="use gitlab or github")

    upstream, estimate = _live(live, max_usd, dry_run)
    if dry_run:
        return
    console = Console(stderr=OPTIONS.json, highlight=False)
    if estimate is not None:
        console.print(escape(estimate.line()))

    def show(step: StepResult) -> None:
        took = f" [dim]{step.seconds:.1f}s[/dim]" if step.seconds else ""
        console.print(f"{_MARK[step.status]} {escape(step.name)} — {escape(step.detail)}{took}")

    with console.status("starting the sandbox (Slack, GitLab, Anthropic)…") as status:

        def starting(name: str) -> None:
            status.update(f"{escape(name)}…")

        report = run_demo(
            keep.absolute() if keep else None,
            on_step=show,
            runtime=runtime,
            on_start=starting,
            forge=forge,
            live=upstream,
            max_usd=max_usd,
        )

    s = report.summary
    tokens = s.get("tokens", {})
    result = Result(
        "demo",
        data={
            "root": str(report.root) if keep else None,
            "steps": [step.__dict__ for step in report.steps],
            "summary": s,
            "wall_seconds": round(report.wall_seconds, 2),
            "emulator_seconds": round(report.emulator_seconds, 2),
            "unsandboxed": report.unsandboxed,
        },
        columns=["case", "status", "MR", "pipelines", "replies", "tokens in/out (cached)"],
    )
    result.rows = [
        [
            s.get("case", "-"),
            s.get("status", "-"),
            s.get("mr", "-"),
            ", ".join(s.get("pipelines", [])) or "-",
            str(s.get("replies", 0)),
            f"{_total_in(tokens)}/{tokens.get('output_tokens', 0)} "
            f"({tokens.get('cache_read_input_tokens', 0)} read from cache)",
        ]
    ]
    result.messages.append(f"exit line: {s.get('exit', '-')}")
    if s.get("sources") is not None:  # what the sandbox world's servers saw being asked
        shown = ", ".join(f"{name} ({n})" for name, n in s["sources"].items()) or "none"
        result.messages.append(f"sources queried (MCP calls): {shown}")
    if report.unsandboxed:
        result.messages.append(f"WARNING: {report.unsandboxed}")
    result.messages.append(
        f"runtime {s.get('runtime')}; wall {report.wall_seconds:.1f}s, of which "
        f"{report.emulator_seconds:.1f}s inside the emulators (requests and CI jobs)"
    )
    if estimate is not None:
        usd = float(s.get("usd", 0.0))
        result.data["live"] = {"estimate": estimate.to_json(), "spent_usd": usd,
                               "max_usd": max_usd}  # fmt: skip
        result.messages.append(f"live: ${usd:.4f} metered (estimated ~${estimate.usd:.2f})")
        if max_usd is not None and usd >= max_usd:
            result.messages.append(f"stopped by the harness's budget at --max-usd {max_usd:g}")
    if keep:
        result.messages.append(f"everything the run wrote is under {keep}")
    failed = [step for step in report.steps if step.status == "failed"]
    if failed:
        result.errors.extend(f"{step.name}: {step.detail}" for step in failed)
        result.exit_code = 1
    emit(result)


def _live(live: bool, max_usd: float | None, dry_run: bool) -> tuple[Any, Any]:
    """--live's upstream and estimate (None, None without it), its refusals, and --dry-run's
    plan (printed here)."""
    from harness_cli.errors import InputError

    if not live:
        if max_usd is not None or dry_run:
            flag = "--max-usd" if max_usd is not None else "--dry-run"
            raise InputError(f"{flag} is for a live demo", hint="add --live, or drop it")
        return None, None
    from harness_cli.eval import live as live_mode
    from harness_cli.eval.live import trial_config

    model, settings = trial_config(None)
    estimate = live_mode.estimate(live_mode.DEMO_RUNS, model, settings, unit="live run")
    if dry_run:
        from harness_cli.sandbox.demo import STEPS

        result = Result("demo", data={"dry_run": True, "live": True,
                                      "estimate": estimate.to_json(),
                                      "steps": [step.name for step in STEPS]})  # fmt: skip
        result.messages.append(estimate.line())
        if max_usd is not None and estimate.usd > max_usd:
            result.messages.append(f"over --max-usd {max_usd:g}: the real run would be refused")
        if not live_mode.has_key():
            result.messages.append(f"{live_mode.KEY_ENV} is not set: the real run would be "
                                   "refused (export it first)")  # fmt: skip
        result.messages.append(f"dry run: {len(STEPS)} steps; nothing was run")
        emit(result)
        return None, estimate
    env = live_mode.require_key("harness demo")
    live_mode.refuse_over(estimate, max_usd)
    return live_mode.upstream(env), estimate


def _total_in(usage: dict[str, int]) -> int:
    """Total input = input + cache writes + cache reads (API-FACTS §3)."""
    return sum(
        usage.get(k, 0)
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
