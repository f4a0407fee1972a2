"""The gap analyzer: a sub-agent the followup calls every N replies; what it finds becomes
``gap_report_NNN.md`` files in the case folder, which ``finalize`` filters into one MR against
the harness's own repo and ``gap-patterns`` clusters across cases.

The file format (read it with ``parse_gap_report`` / ``load_gap_reports``)::

    ---
    schema_version: 1
    id: gap_report_003
    case_id: AAA-101
    category: skipped_source      # GAP_CATEGORIES
    title: The investigation never read the slow-query log
    confidence: 72                # 0-100, the analyzer's own
    evidence:                     # at least one; "file: what it shows"
    - 'followup_transcript_004.md: the operator pointed at the slow-query log'
    proposed_change: Add the slow-query log to the checklist of data sources
    target_file: sops/team-a/SOP.md   # a path relative to the harness repo's root
    created_at: '2026-11-29T10:00:00Z'
    source: gap_analyzer
    transcripts: [followup_transcript_001.md, followup_transcript_005.md]
    status: open                  # open | false_positive | accepted | applied (finalize sets)
    ---
    # The investigation never read the slow-query log
    (prose for humans: the evidence and the proposed change again)

The front matter is the contract; the body is only for people.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness_cli import clock
from harness_cli.config import Config
from harness_cli.errors import InputError
from harness_cli.logs import event
from harness_cli.loop.jsonblocks import json_objects
from harness_cli.loop.prompts import render, sops_dir
from harness_cli.memory.transcripts import Transcript
from harness_cli.state.store import atomic_write_text

log = logging.getLogger("harness.memory")

GapCategory = Literal[
    "skipped_source",
    "wrong_tool",
    "pipeline_bug",
    "missing_test",
    "mr_format",
    "prompt_gap",
    "sop_gap",
    "kb_gap",
    "other",
]
GAP_CATEGORIES: tuple[str, ...] = GapCategory.__args__  # type: ignore[attr-defined]
PATTERN = "gap_report_*.md"
_NAME = re.compile(r"^gap_report_(\d+)\.md$")
_FRONT = re.compile(r"\A---\n(.*?)\n---\n?", re.DOTALL)


class GapFinding(BaseModel):
    """One gap as the analyzer states it (its JSON answer)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    category: GapCategory
    """What kind of harness failure it is."""
    title: str = Field(min_length=3, max_length=200)
    """One line."""
    confidence: int = Field(ge=0, le=100)
    """How sure the analyzer is that this is a real gap (finalize drops the weak ones)."""
    evidence: list[str] = Field(min_length=1)
    """Where it shows: transcript or file, and what it shows."""
    proposed_change: str = Field(min_length=3)
    """What to change in the harness, concretely."""
    target_file: str = Field(min_length=1)
    """The file of the harness repo the change goes to, relative to its root."""

    @field_validator("target_file")
    @classmethod
    def _relative(cls, value: str) -> str:
        path = PurePosixPath(value)
        if path.is_absolute() or ".." in path.parts or value.startswith("~"):
            raise ValueError("target_file must be a path inside the harness repo, e.g. sops/X.md")
        return str(path)


class GapReport(GapFinding):
    """The front matter of ``gap_report_NNN.md``. Unknown keys are kept, not refused: later
    stages (finalize, an operator) annotate a report in place."""

    model_config = ConfigDict(extra="allow", str_strip_whitespace=True)

    schema_version: int = 1
    id: str
    """The file's stem, ``gap_report_NNN``."""
    case_id: str
    created_at: datetime
    source: str = "gap_analyzer"
    """Who filed it: ``gap_analyzer`` (or an operator, by hand)."""
    transcripts: list[str] = Field(default_factory=list)
    """The transcripts the analyzer read."""
    status: Literal["open", "false_positive", "accepted", "applied"] = "open"
    """``finalize`` moves it on: false positives are dropped, the rest go into the MR."""


def parse_gap_report(text: str, *, origin: str = "gap report") -> GapReport:
    match = _FRONT.match(text)
    if not match:
        raise InputError(f"{origin}: no YAML front matter between '---' lines")
    try:
        data = yaml.safe_load(match.group(1))
        return GapReport.model_validate(data)
    except yaml.YAMLError as exc:
        raise InputError(f"{origin}: broken YAML front matter ({exc})") from None
    except ValidationError as exc:
        first = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        raise InputError(f"{origin}: {first}") from None


def load_gap_reports(case_dir: Path) -> list[tuple[Path, GapReport]]:
    """Every readable gap report of the case, in number order; a broken one is logged and
    skipped (a later reader should not fail on one bad file)."""
    found: list[tuple[int, Path, GapReport]] = []
    for path in case_dir.glob(PATTERN):
        match = _NAME.match(path.name)
        if not match:
            continue
        try:
            report = parse_gap_report(path.read_text(encoding="utf-8"), origin=str(path))
        except InputError as exc:
            event(log, "gap_report_unreadable", logging.WARNING, path=str(path), error=exc.message)
            continue
        found.append((int(match.group(1)), path, report))
    return [(p, r) for _, p, r in sorted(found, key=lambda x: x[0])]


FIELD_ORDER = (
    "schema_version", "id", "case_id", "category", "title", "confidence", "evidence",
    "proposed_change", "target_file", "created_at", "source", "transcripts", "status",
)  # fmt: skip
"""The front matter's key order on disk (the one the module docstring shows)."""


def render_gap_report(report: GapReport) -> str:
    data = report.model_dump(mode="json")
    ordered = {key: data.pop(key) for key in FIELD_ORDER if key in data} | data
    front = yaml.safe_dump(ordered, sort_keys=False, allow_unicode=True, width=100)
    evidence = "\n".join(f"- {e}" for e in report.evidence)
    body = (
        f"# {report.title}\n\n{report.category}, confidence {report.confidence} — "
        f"change `{report.target_file}`.\n\n## Evidence\n\n{evidence}\n\n"
        f"## Proposed change\n\n{report.proposed_change}\n"
    )
    return f"---\n{front}---\n{body}"


def parse_findings(answer: str) -> tuple[list[GapFinding], list[str]]:
    """The analyzer's ``{"gaps": [...]}`` → valid findings and one problem line per bad one."""
    blocks = [b for b in json_objects(answer) if isinstance(b.get("gaps"), list)]
    if not blocks:
        return [], ['no {"gaps": [...]} JSON block in the answer']
    data = blocks[-1]
    good: list[GapFinding] = []
    problems: list[str] = []
    for i, item in enumerate(data["gaps"]):
        try:
            good.append(GapFinding.model_validate(item))
        except ValidationError as exc:
            problems.append(f"gap {i + 1}: {exc.errors()[0]['msg']}")
    return good, problems


def write_reports(
    case_dir: Path, case_id: str, findings: list[GapFinding], transcripts: list[str]
) -> list[Path]:
    numbers = [int(m.group(1)) for p in case_dir.glob(PATTERN) if (m := _NAME.match(p.name))]
    written: list[Path] = []
    now = clock.now()
    for offset, finding in enumerate(findings, 1):
        stem = f"gap_report_{max(numbers, default=0) + offset:03d}"
        report = GapReport(
            **finding.model_dump(),
            id=stem,
            case_id=case_id,
            created_at=now,
            transcripts=transcripts,
        )
        path = case_dir / f"{stem}.md"
        atomic_write_text(path, render_gap_report(report))
        written.append(path)
    return written


# -- the sub-agent -------------------------------------------------------------------------------


def harness_files(cfg: Config, limit: int = 80) -> str:
    """What a gap report may target: prompts, config, SOPs, and the package's folders — paths
    relative to the harness repo (the folder holding agent-config/)."""

    root = cfg.dir.resolve().parent
    found: list[str] = []
    candidates = [
        *sorted((cfg.dir / "prompts").glob("*.md")),
        *sorted(cfg.dir.glob("*.yaml")),
        *sorted(sops_dir(cfg).rglob("*.md")),
        *sorted(p for p in (root / "harness_cli").glob("*") if p.is_dir() and p.name[0] != "_"),
    ]
    for path in candidates:
        try:
            found.append(path.resolve().relative_to(root).as_posix())
        except ValueError:
            continue
    return "\n".join(f"- {p}" for p in found[:limit]) or "(none found)"


def analyze(
    cfg: Config,
    ask: Callable[[str, str], str],
    *,
    case_id: str,
    project: str,
    case_dir: Path,
    ticket: str,
    recent: list[Transcript],
    every: int,
) -> list[Path]:
    """One gap analysis over ``recent`` transcripts; returns the reports written. A malformed
    answer writes nothing and is logged: a missed gap costs less than a garbage report."""

    existing = load_gap_reports(case_dir)
    names = [t.path.name for t in recent]
    prompt = render(
        cfg,
        "gap-analyzer",
        case_id=case_id,
        project=project,
        every=str(every),
        ticket=ticket.strip() or "(no ticket text)",
        task_md=_read(case_dir / "TASK.md"),
        analysis_md=_read(case_dir / "ANALYSIS.md"),
        transcript_names=", ".join(names) or "none",
        transcripts="\n\n".join(f"### {t.path.name}\n{t.body.strip()}" for t in recent),
        existing="\n".join(f"- [{r.category}] {r.title} ({p.name})" for p, r in existing)
        or "(none)",
        harness_files=harness_files(cfg),
        categories=", ".join(GAP_CATEGORIES),
    )
    findings, problems = parse_findings(ask("gap-analyzer", prompt))
    if problems:
        event(log, "gap_analysis_malformed", logging.WARNING, case_id=case_id, problems=problems)
    known = {(r.category, r.title.lower()) for _, r in existing}
    fresh = [f for f in findings if (f.category, f.title.lower()) not in known]
    written = write_reports(case_dir, case_id, fresh, names)
    event(
        log,
        "gap_analysis",
        case_id=case_id,
        transcripts=names,
        found=len(findings),
        written=[p.name for p in written],
    )
    return written


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip() or f"({path.name} is empty)"
    except FileNotFoundError:
        return f"(no {path.name} yet)"
