"""Cost of the quality gates per completion report: ``evaluate()`` on parsed reports (clean,
violation-heavy, with previous + review + a 19-verdict history) and ``evaluate_text()`` on raw
model prose (extraction + validation + gates). Goal: microseconds, not milliseconds.

    .venv/bin/python bench/bench_gates.py          # BENCH_RUNS=20000 by default
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

from harness_cli.investigation.gates import evaluate, evaluate_text
from harness_cli.investigation.review import DIMENSIONS, ReviewVerdict
from harness_cli.loop.report import parse_report

RUNS = int(os.environ.get("BENCH_RUNS", "20000"))

CLEAN: dict[str, Any] = {
    "status": "COMPLETE",
    "confidence": 88,
    "assumption_register": ["the deploy is the only change"],
    "contradiction_register": ["logs 02:00 vs metrics 01:50 (clock skew)"],
    "adjacent_problems": [{"summary": "disk at 80%", "status": "tracked", "blocker": ""}],
    "draft_response": "The outage came from the 02:00 deploy. However, the rollback is ready.",
    "causal_chain_complete": True,
    "root_cause": {"summary": "index dropped", "evidence": [{"claim": "log", "kind": "HARD"}]},
    "actions": [
        {
            "description": "recreate the index",
            "maps_to_root_cause": True,
            "verify_action": {"description": "EXPLAIN", "expected_outcome": "idx", "timing": "now"},
        }
    ],
    "new_facts": ["the index is gone"],
}
MESSY: dict[str, Any] = {
    "status": "complete",
    "confidence": 0.97,
    "open_questions": [f"question {i}" for i in range(4)],
    "unchecked_sources": ["datadog", {"name": "db", "access_status": "probably restricted"}],
    "adjacent_problems": ["TBD", {"summary": "disk", "status": "open"}],
    "actions": ["restart", {"description": "drop cache", "destructive": True}],
    "root_cause": {"summary": "maybe the deploy", "evidence": ["it lines up"]},
}
REVIEW = ReviewVerdict.model_validate(
    {
        "dimensions": {d: ("FAIL" if i < 3 else "PASS") for i, d in enumerate(DIMENSIONS)},
        "severity": "minor",
        "red_team": {"hypothesis": "cron job", "diverges": True},
    }
)
PROSE = (
    "I checked the deploy log and the slow-query log. The index was dropped at 02:00, but "
    "the first alert fired at 01:50, which contradicts the deploy-only theory.\n\n"
    * 8
    + "```json\n"
    + json.dumps(MESSY, indent=2)
    + "\n```\n"
)


def per_call_us(fn: Callable[[], object], runs: int = RUNS) -> float:
    for _ in range(min(runs, 500)):  # warm up
        fn()
    start = time.perf_counter_ns()
    for _ in range(runs):
        fn()
    return (time.perf_counter_ns() - start) / runs / 1000


def main() -> None:
    clean, messy = parse_report(CLEAN), parse_report(MESSY)
    previous = parse_report({**CLEAN, "confidence": 80, "status": "IN_PROGRESS"})
    history = [evaluate(previous)] * 19
    cases: list[tuple[str, Callable[[], object]]] = [
        ("evaluate: clean report", lambda: evaluate(clean)),
        ("evaluate: messy report, 10 violations", lambda: evaluate(messy)),
        (
            "evaluate: + previous, review, 19-verdict history",
            lambda: evaluate(messy, previous, REVIEW, history=history),
        ),
        ("evaluate_text: 2 KB of prose + block", lambda: evaluate_text(PROSE)),
    ]
    print(f"{RUNS} runs each")
    for name, fn in cases:
        print(f"  {name:<52} {per_call_us(fn):8.1f} µs/report")


if __name__ == "__main__":
    main()
