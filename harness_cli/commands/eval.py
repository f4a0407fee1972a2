"""harness eval [SUITE…] [--runs N] [--ablate COMPONENT] [--matrix] [--runtime …] [--json]
[--overlay REPO] [--baseline FILE] and harness eval export CASE — eval suites on the embedded
emulators."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import typer

from harness_cli.commands import new_app
from harness_cli.components import COMPONENTS
from harness_cli.errors import InputError
from harness_cli.eval import gate, report, runner
from harness_cli.eval.before_after import overlaid
from harness_cli.eval.export import export_case
from harness_cli.output import emit
from harness_cli.result import Result

run_app = new_app("Run eval suites on the emulators: pass rates with intervals, ablations.")
export_app = new_app("Turn a closed case into an eval case (its ticket, answers and outcome).")


@run_app.command()
def evaluate(
    suites: list[str] = typer.Argument(
        None,
        metavar="[SUITE]...",
        help="Shipped suites (investigation, delivery), folders "
        "or case files. Default: investigation, or the --baseline's.",
    ),
    runs: int | None = typer.Option(
        None,
        "--runs",
        "-n",
        min=1,
        help="Trials per stochastic or live case and variant, fixed before the run (seeds "
        "1..N); a deterministic case runs once. Default: 3, or the --baseline's.",
    ),
    ablate: list[str] = typer.Option(
        [],
        "--ablate",
        metavar="COMPONENT",
        help="Pair the baseline with the harness without "
        "this one component (repeat for several single-component pairs).",
    ),
    matrix: bool = typer.Option(
        False,
        "--matrix",
        help="Every single-component ablation; writes a markdown report and a plot (--out).",
    ),
    runtime: str = typer.Option("anthropic", "--runtime", help="anthropic or claude-code."),
    jobs: int = typer.Option(0, "--jobs", "-j", min=0, help="Parallel trials (0: the cores)."),
    timeout: float | None = typer.Option(
        None, "--timeout", help="Wall clock of one trial, seconds (300; --live: 1800)."
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        metavar="DIR",
        help="Write report.md, ablation.png/.svg and eval.json here "
        "(--matrix: default ./eval-report).",
    ),
    config_root: Path | None = typer.Option(
        None,
        "--config-root",
        metavar="DIR",
        help="A folder with agent-config/ and sops/ to "
        "evaluate instead of the packaged ones (e.g. an improvement MR's worktree).",
    ),
    overlay: Path | None = typer.Option(
        None,
        "--overlay",
        metavar="REPO",
        help="Lay this harness repo's prompts and SOPs "
        "over the packaged config (an improvement MR's pipeline: --overlay .).",
    ),
    baseline: Path | None = typer.Option(
        None,
        "--baseline",
        metavar="FILE",
        help="Exit 1 when the pass rate falls below the lower end "
        "of this baseline's 95 % interval (evals/baseline.json, or an eval.json).",
    ),
    list_components: bool = typer.Option(False, "--list", help="List the components."),
    live: bool = typer.Option(
        False,
        "--live",
        help="A model eval: the real model (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL) plays "
        "every role of the honest cases, --runs trials each; the cost is estimated first.",
    ),
    max_usd: float | None = typer.Option(
        None,
        "--max-usd",
        min=0.0001,
        metavar="N",
        help="--live: refuse when the estimate is over N dollars; stop starting trials "
        "once the metered spend reaches it (a partial report).",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the plan (and a live run's estimate); run nothing."
    ),
    exhaustive: bool = typer.Option(
        False,
        "--exhaustive",
        help="Run every ablation pair, also a gate's on a deterministic case where the "
        "baseline never raised it (by default that pair is the baseline's run, inferred).",
    ),
) -> None:
    """Each trial runs the real subcommands (init, case new, investigate, review; or the
    delivery flow) in a fresh HARNESS_HOME. Every trial started is counted."""

    if list_components:
        result = Result("eval", data={n: c.description for n, c in COMPONENTS.items()})
        result.columns = ["component", "suites", "what"]
        result.rows = [[c.name, ",".join(c.suites), c.description] for c in COMPONENTS.values()]
        emit(result)
        return

    if runtime not in ("anthropic", "claude-code"):
        raise InputError(f"--runtime {runtime!r}", hint="use anthropic or claude-code")
    if overlay is not None and config_root is not None:
        raise InputError("--overlay and --config-root both name the config", hint="give one")
    if live:
        _live_usage(ablate, matrix, dry_run)
    elif max_usd is not None:
        raise InputError("--max-usd caps a live run's spend", hint="add --live, or drop it")
    if timeout is None:
        from harness_cli.eval.live import TIMEOUT_S

        timeout = TIMEOUT_S if live else 300.0

    floor = gate.read(baseline) if baseline is not None else None
    if floor is not None:  # the same suites and trials as the baseline, unless told otherwise
        suites = suites or floor.suites
        runs = runs or floor.runs
    runs = runs or 3
    with contextlib.ExitStack() as stack:
        if overlay is not None:
            config_root = stack.enter_context(overlaid(overlay))
        if live or dry_run:
            from harness_cli.commands import _eval_live

            ran = _eval_live.run(suites, runs, runtime, jobs, timeout, config_root, live=live,
                                 max_usd=max_usd, dry_run=dry_run, ablate=ablate, matrix=matrix,
                                 progress=_progress)  # fmt: skip
            if ran is None:  # --dry-run: the plan was printed, nothing ran
                return
            run, live_said = ran
        else:
            run = _evaluate(
                suites, runs, runtime, ablate, matrix, jobs, timeout, config_root, exhaustive
            )
    result = Result("eval", data=run.to_json(), columns=report.COLUMNS, rows=report.rows(run))
    if live:
        from harness_cli.eval.live import lines

        result.data["live"] = live_said
        result.messages += lines(live_said)
        if live_said["cap"]["reached"] and live_said["cap"]["trials_not_started"]:
            result.exit_code = 4  # stopped by the cap: a partial report (CONTRACT: 4, policy)
    result.messages += report.delta_lines(run)
    base = run.overall()
    result.messages.append(
        f"{run.started} trial(s) started and counted; baseline {base.case_score:g}/"
        f"{base.cases} cases passed ({base.rate:.0%} [{base.low:.0%}, {base.high:.0%}], the "
        f"case as the unit), {base.defective_accepted} "
        f"defective accepted as done; {run.wall_seconds:.0f} s"
    )
    if overlay is not None and floor is not None:
        changed = gate.model_facing_changes(overlay, floor)
        if changed:
            result.data["overlay_digest"] = gate.change_digest(overlay, changed)
    if floor is not None:
        held, line = gate.verdict(base.case_score, base.cases, floor)
        result.messages.append(line)
        result.data["gate"] = {"held": held, "baseline": floor.to_json()}
        if held and overlay is not None and run.kind == "machinery":
            # scripted models ignore prompts: a model-facing change needs more than this run
            held, said = gate.unjudged(overlay, floor)
            if said:
                result.messages.append(said)
                result.data["gate"].update(held=held, model_facing=said)
        result.exit_code = result.exit_code or (0 if held else 1)
    if matrix and out is None:
        out = Path("eval-report")
    if out is not None:
        result.changed.append(report.write(run, out))
        if live:
            from harness_cli.eval.live import write

            result.changed.append(write(live_said, out))
    emit(result)


def _live_usage(ablate: list[str], matrix: bool, dry_run: bool) -> None:
    """--live's own refusals, before anything is planned: the key (unless only the plan is
    asked for), and no ablation (each component would multiply the spend)."""
    from harness_cli.errors import InputError
    from harness_cli.eval.live import require_key

    if ablate or matrix:
        raise InputError("--live runs the full harness only: no --ablate or --matrix",
                         hint="ablations are machinery evals: run them without --live")  # fmt: skip
    if not dry_run:
        require_key("harness eval")


def _evaluate(
    suites: list[str] | None,
    runs: int,
    runtime: str,
    ablate: list[str],
    matrix: bool,
    jobs: int,
    timeout: float,
    config_root: Path | None,
    exhaustive: bool = False,
) -> Any:

    try:
        return runner.evaluate(
            suites or ["investigation"], runs=runs, runtime=runtime, ablate=ablate,
            matrix=matrix, jobs=jobs or None, timeout_s=timeout, config_root=config_root,
            progress=_progress, exhaustive=exhaustive,
        )  # fmt: skip
    except ValueError as exc:  # the ablation validator
        raise InputError(
            str(exc), hint="--ablate names exactly one component; see --list"
        ) from None


def _progress(trial: Any, done: int, total: int) -> None:
    if sys.stderr.isatty() or done == total or done % 25 == 0:
        sys.stderr.write(f"eval: {done}/{total} trials ({trial.case} {trial.variant} seed "
                         f"{trial.seed}: {trial.status})\n")  # fmt: skip


@export_app.command()
def export(
    case: str = typer.Argument(..., help="A case with a finished investigation."),
    out: Path | None = typer.Option(None, "--out", help="Write here (default: stdout)."),
) -> None:
    """Its ticket, the model's recorded answers per iteration and role, and its outcome as
    what the grader expects: replay it after a change to prompts, SOPs or gates."""
    import yaml

    data = export_case(case)
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    result = Result("eval export", data=data)
    if out is None:
        result.messages.append(text)
    else:
        out.write_text(text, encoding="utf-8")
        # The hint is run from anywhere: the path it names is absolute even when --out is not.
        result.changed.append(f"wrote {out} (run it: harness eval {out.absolute()})")
    emit(result)


class _App:
    """``harness eval export CASE``, ``harness eval incidents [ID…]`` or ``harness eval
    [SUITE…]``: one command name, three shapes, routed on the first word."""

    def __call__(self, *, args: list[str], prog_name: str, standalone_mode: bool) -> Any:
        if args and args[0] == "export":
            return export_app(args=args[1:], prog_name=f"{prog_name} export",
                              standalone_mode=standalone_mode)  # fmt: skip
        if args and args[0] == "incidents":  # the incident benchmark: its own options
            from harness_cli.commands.eval_incidents import app as incidents_app

            return incidents_app(args=args[1:], prog_name=f"{prog_name} incidents",
                                 standalone_mode=standalone_mode)  # fmt: skip
        return run_app(args=args, prog_name=prog_name, standalone_mode=standalone_mode)


app = _App()
