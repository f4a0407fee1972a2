"""Synthetic gap reports in gap_analyzer's file format, with planted failure modes.

Each planted theme has its own words (what the reports of that failure mode keep saying), a
category, a target file and a proposed fix; every report also carries filler that all reports
share and a few random words, so a theme is recoverable only from the words that matter. The
generator is seeded: the same arguments write the same corpus. Used by the tests and by
``bench/bench_gap_patterns.py``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import yaml

THEMES: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    ("skipped_source", "sops/team-a/SOP.md", "Require the direct table query first",
     "schema inference", ("database", "table", "query", "schema", "orders", "sql", "columns",
                          "inferred", "migration", "postgres", "rows", "direct")),
    ("wrong_tool", "agent-config/prompts/investigator.md", "Search logs in Kibana, not grep",
     "log search tool", ("grep", "kibana", "elastic", "logs", "index", "timestamps", "search",
                         "tail", "syslog", "retention", "shards", "lucene")),
    ("mr_format", "sops/STYLE.md", "Ban the templated headings in MR descriptions",
     "MR description", ("description", "headings", "bold", "template", "bullet", "reviewers",
                        "prose", "markdown", "summary", "wording", "tags", "sections")),
    ("missing_test", "tests/delivery/test_push_recovery.py", "Add a regression test",
     "regression test", ("regression", "fixture", "boundary", "pytest", "assert", "coverage",
                         "parametrize", "flaky", "mock", "testcase", "unittest", "expected")),
    ("pipeline_bug", "harness_cli/delivery/push/recovery.py", "Bound the rebase retry budget",
     "push retry", ("rebase", "retry", "budget", "push", "conflict", "worktree", "branch",
                    "upstream", "force", "remote", "reflog", "detached")),
    ("skipped_source", "sops/team-b/SOP.md", "Read the PagerDuty incident timeline",
     "incident timeline", ("pagerduty", "incident", "timeline", "alert", "oncall", "escalation",
                           "severity", "acknowledged", "pager", "runbook", "outage", "paging")),
    ("pipeline_bug", "harness_cli/investigation/loop.py", "Stop the loop on two empty rounds",
     "loop budget", ("iteration", "loop", "stalled", "facts", "rounds", "budget", "exit",
                     "hypothesis", "slate", "spinning", "repeat", "progress")),
    ("wrong_tool", "agent-config/prompts/dev-agent.md", "Run the suite through make",
     "test runner", ("make", "makefile", "target", "runner", "tox", "nox", "venv", "install",
                     "interpreter", "dependencies", "lockfile", "toolchain")),
)  # fmt: skip
"""(category, target file, proposed fix, title stem, theme words) per planted failure mode."""

FILLER_TEXT = (
    "the investigation should have done this earlier in the case the agent went on without it "
    "and the operator had to point it out in the thread which cost another round"
)
FILLER = FILLER_TEXT.split()
NOISE = [f"term{n}" for n in range(4000)]


@dataclass(frozen=True)
class Planted:
    case_id: str
    name: str
    theme: int
    text: str


def planted_reports(
    count: int, *, themes: int = len(THEMES), per_case: int = 3, seed: int = 7
) -> list[Planted]:
    """``count`` reports spread over cases of ``per_case`` reports, each of a random theme."""
    rng = random.Random(seed)
    found: list[Planted] = []
    for index in range(count):
        theme = rng.randrange(themes)
        category, target, fix, stem, words = THEMES[theme]
        case_id = f"CASE-{index // per_case + 1:05d}"
        name = f"gap_report_{index % per_case + 1:03d}.md"
        meta = {
            "schema_version": 1,
            "id": name[:-3],
            "case_id": case_id,
            "category": category,
            "title": f"The {stem} was handled badly ({' '.join(rng.sample(words, 2))})",
            "confidence": rng.randrange(55, 96),
            "evidence": [
                f"followup_transcript_{rng.randrange(1, 9):03d}.md: "
                + " ".join(rng.choices(words, k=6) + rng.choices(FILLER, k=5))
            ],
            "proposed_change": fix,
            "target_file": target,
            "created_at": "2026-11-20T10:00:00Z",
            "source": "gap_analyzer",
            "status": "open",
        }
        other = THEMES[(theme + rng.randrange(1, len(THEMES))) % len(THEMES)][4]
        body_words = (
            rng.choices(words, k=12)
            + rng.choices(other, k=3)  # a confuser: reports mention other modes in passing
            + rng.choices(FILLER, k=12)
            + rng.sample(NOISE, 6)
        )
        rng.shuffle(body_words)
        text = (
            "---\n" + yaml.safe_dump(meta, sort_keys=False) + "---\n"
            f"# {meta['title']}\n\n" + " ".join(body_words) + ".\n"
        )
        found.append(Planted(case_id, name, theme, text))
    return found


def write_reports(cases_root: Path, reports: list[Planted]) -> None:
    for report in reports:
        folder = cases_root / report.case_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / report.name).write_text(report.text, encoding="utf-8")


def gap_report(
    *,
    category: str = "skipped_source",
    confidence: object = 80,
    title: str = "The investigation inferred the schema instead of querying the table",
    proposed_change: str = "Require the direct table query before any schema inference",
    target_file: str = "agent-config/prompts/investigator.md",
    created_at: str = "2026-11-29T08:00:00Z",
    body: str = "The operator pointed out that the orders table was never queried.",
    **extra: object,
) -> str:
    """One report in gap_analyzer's format (fields left out with ``None``)."""
    meta = {
        "schema_version": 1,
        "category": category,
        "title": title,
        "confidence": confidence,
        "evidence": ["followup_transcript_002.md: the operator asked for the direct query"],
        "proposed_change": proposed_change,
        "target_file": target_file,
        "created_at": created_at,
        "source": "gap_analyzer",
        "status": "open",
        **extra,
    }
    meta = {k: v for k, v in meta.items() if v is not None}
    return "---\n" + yaml.safe_dump(meta, sort_keys=False) + f"---\n# {title}\n\n{body}\n"
