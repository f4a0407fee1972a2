"""harness eval incidents [INCIDENT…] [--investigator reference|bad] [--out DIR] [--json] —
the incident benchmark (``harness_cli.eval.incidents``) on the emulators and the sandbox world:
pass rate, root cause / evidence / exit, $ and tokens per case, p50/p95 latency, Brier and ECE
per investigator, then each one against the reference."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from harness_cli.commands import new_app
from harness_cli.output import emit
from harness_cli.result import Result

app = new_app("The incident benchmark: scripted investigators over the sandbox world.")


@app.command()
def incidents(
    only: list[str] = typer.Argument(
        None, metavar="[INCIDENT]...", help="Incident ids (default: all of evals/incidents/)."
    ),
    investigator: list[str] = typer.Option(
        [],
        "--investigator",
        metavar="NAME",
        help="reference or bad (repeat; default: both, the reference first as the baseline).",
    ),
    folder: Path | None = typer.Option(
        None, "--from", metavar="DIR", help="A folder of incident files instead of the shipped."
    ),
    out: Path | None = typer.Option(
        None, "--out", metavar="DIR", help="Write incidents.md and incidents.json here."
    ),
) -> None:
    """Run the incidents through `harness investigate` (anthropic runtime, scripted models)."""
    # Imported here: the emulators and the world stay off `harness --help`'s path.
    import json

    from harness_cli.errors import InputError
    from harness_cli.eval.incidents import report
    from harness_cli.eval.incidents.grade import summarise
    from harness_cli.eval.incidents.investigators import INVESTIGATORS
    from harness_cli.eval.incidents.model import INCIDENTS_DIR, load_incidents
    from harness_cli.eval.incidents.run import run_all

    unknown = sorted(set(investigator) - set(INVESTIGATORS))
    if unknown:
        raise InputError(f"--investigator {unknown[0]!r}", hint="use reference or bad")
    who = [w for w in INVESTIGATORS if not investigator or w in investigator]
    found = load_incidents((folder or INCIDENTS_DIR).absolute(), only=only or None)
    if not found:
        raise InputError(f"no incident in {folder or INCIDENTS_DIR}", hint="give a folder of .yaml")
    results = run_all(found, who, on_result=_progress)
    rows = summarise(results)
    result = Result(
        "eval incidents",
        data={"summaries": [s.to_json() for s in rows], "cases": [r.to_json() for r in results]},
        messages=[
            report.summary_table(rows),
            *report.comparison(rows),
            report.calibration_note(),
        ],
    )
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        text = "\n\n".join([*result.messages, report.cases_table(results)])
        (out / "incidents.md").write_text(text + "\n", encoding="utf-8")
        (out / "incidents.json").write_text(json.dumps(result.data, indent=1) + "\n")
        result.changed.append(f"wrote {out.absolute() / 'incidents.md'} and incidents.json")
    emit(result)


def _progress(r: Any) -> None:
    sys.stderr.write(f"eval incidents: {r.incident} {r.investigator}: "
                     f"{'pass' if r.passed else 'fail'} (exit={r.exit})\n")  # fmt: skip
