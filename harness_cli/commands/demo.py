"""harness demo — one whole ticket on the sandbox, offline, no tokens."""

from __future__ import annotations

from pathlib import Path

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
) -> None:
    """Post a ticket into the sandbox's #support and drive it through every built workflow."""
    from rich.console import Console
    from rich.markup import escape

    if forge not in ("gitlab", "github"):
        raise InputError(f"--forge {forge!r} is not a forge", hint="use gitlab or github")

    console = Console(stderr=OPTIONS.json, highlight=False)

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
    if keep:
        result.messages.append(f"everything the run wrote is under {keep}")
    failed = [step for step in report.steps if step.status == "failed"]
    if failed:
        result.errors.extend(f"{step.name}: {step.detail}" for step in failed)
        result.exit_code = 1
    emit(result)


def _total_in(usage: dict[str, int]) -> int:
    """Total input = input + cache writes + cache reads (API-FACTS §3)."""
    return sum(
        usage.get(k, 0)
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
