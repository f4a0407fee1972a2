"""The incident benchmark (#31 item 5): every incident of ``evals/incidents/`` through
``harness investigate`` (the anthropic runtime, the Anthropic emulator playing the script, the
sandbox world's logs, metrics, tracker and docs as MCP servers) with the scripted reference
investigator — the baseline of the run — and with a deliberately careless one (skips the
proving sources, takes the loud distractor for the cause, claims 95 %).

Prints per investigator: pass rate, root cause / evidence / exit rates, $ and tokens per case
(the harness's cost meter), p50/p95 latency of `harness investigate`, mean final confidence,
Brier score and ECE (10 equal-width bins); then the careless investigator against the
reference (differences in percentage points, ratios of cost and latency), then each case.

Run: ``.venv/bin/python bench/bench_incidents.py [INCIDENT_ID…] [--out DIR]`` (``--out``
writes ``incidents.md`` and ``incidents.json``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness_cli.eval.incidents import report  # noqa: E402
from harness_cli.eval.incidents.grade import CaseResult, summarise  # noqa: E402
from harness_cli.eval.incidents.investigators import INVESTIGATORS  # noqa: E402
from harness_cli.eval.incidents.model import load_incidents  # noqa: E402
from harness_cli.eval.incidents.run import run_all  # noqa: E402


def main() -> None:
    args = sys.argv[1:]
    out = None
    if "--out" in args:
        at = args.index("--out")
        out = Path(args[at + 1])
        del args[at : at + 2]
    incidents = load_incidents(only=args or None)
    began = time.monotonic()

    def progress(r: CaseResult) -> None:
        mark = "pass" if r.passed else "FAIL"
        print(f"  {r.incident:<28} {r.investigator:<9} {mark} exit={r.exit} "
              f"({r.seconds:.1f} s)", file=sys.stderr, flush=True)  # fmt: skip

    results = run_all(incidents, INVESTIGATORS, on_result=progress)
    wall = time.monotonic() - began
    rows = summarise(results)
    text = "\n\n".join(
        [
            f"{len(incidents)} incidents × {len(INVESTIGATORS)} investigators, "
            f"{len(results)} runs in {wall:.0f} s (anthropic runtime, scripted models)",
            report.summary_table(rows),
            "\n".join(report.comparison(rows)),
            report.calibration_note(),
            report.cases_table(results),
        ]
    )
    print(text)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "incidents.md").write_text(text + "\n", encoding="utf-8")
        data = {"wall_seconds": round(wall, 1), "summaries": [s.to_json() for s in rows],
                "cases": [r.to_json() for r in results]}  # fmt: skip
        (out / "incidents.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
