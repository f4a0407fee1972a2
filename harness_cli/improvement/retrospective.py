"""auto_retrospective: at a case's end (merged, closed or finalized), which failure modes occurred.

Reference (Loop 2): "At the end of each case, the auto_retrospective step records which failure
modes occurred, sorted into three types … Records accumulate per project in the case registry."

The evidence is what the harness itself recorded, never the model's own account:
- the gate verdicts of every iteration and review (``iterations/NN.json``, ``review/NN.json``,
  archived runs under ``runs/*/`` included): each violation code is a mode (table in
  :mod:`failure_modes`);
- the last valid completion report: every unchecked source still *reachable* (no real error
  recorded — the same test as G4) is a skipped source, named ("skipped orders DB query");
- the exit line in ``case.json``: ``stalled``, ``timeout`` and ``degrading`` mean tracing
  stopped short;
- gap reports of the data-gathering categories (``skipped_source``, ``wrong_tool``), unless
  marked ``false_positive``.

Output: ``retrospective.json`` in the case folder, and a summary (mode ids) in ``case.json`` —
the per-project registry kb-update tallies. :func:`write_retrospective` is idempotent: the same
evidence writes nothing and returns the same path.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness_cli import clock
from harness_cli.config import Config
from harness_cli.improvement import failure_modes as fm
from harness_cli.improvement.gap_reports import read_case_reports
from harness_cli.investigation.gates.g_gates import reachable
from harness_cli.logs import event
from harness_cli.loop.report import extract_report
from harness_cli.state.store import atomic_write_text
from harness_cli.workspace import registry
from harness_cli.workspace.case import Case

log = logging.getLogger("harness.improvement.retrospective")

FILE = "retrospective.json"
SUMMARY_KEY = "retrospective"
"""The key of the summary kept in ``case.json``."""
MAX_EVIDENCE = 5
_EXIT = re.compile(r"exit=(\w+)")


class FailureMode(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    """``<type>/<subject>``, the same for the same mistake in every case."""
    type: fm.FailureType
    label: str
    evidence: list[str] = Field(default_factory=list)
    """Where it was seen, e.g. ``iterations/03.json: [A1] claimed 85% over the 72% cap``."""


class Retrospective(BaseModel):
    """``case-workspaces/<case>/retrospective.json``."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = 1
    case_id: str
    project: str
    status: str
    ended_by: str
    """``merged``, ``closed``, or ``finalized`` for a case finalized before it ended otherwise
    (as first written: later rewrites keep it unless the evidence changed)."""
    exit: str | None = None
    failure_modes: list[FailureMode] = Field(default_factory=list)
    by_type: dict[str, list[str]] = Field(default_factory=dict)
    """Mode ids per type (all three types present, possibly empty)."""
    harness_gaps: dict[str, int] = Field(default_factory=dict)
    """Gap reports per category, all categories (Loop 1's input, for the record)."""
    inputs: dict[str, int] = Field(default_factory=dict)
    written_at: datetime

    def mode_ids(self) -> list[str]:
        return [m.id for m in self.failure_modes]

    def content(self) -> dict[str, Any]:
        """What idempotence compares: everything but when and by what it was written."""
        return self.model_dump(mode="json", exclude={"written_at", "ended_by", "status"})


class _Collector:
    def __init__(self) -> None:
        self.modes: dict[str, FailureMode] = {}

    def add(self, mode_id: str, spec: fm.ModeSpec, where: str) -> None:
        mode = self.modes.get(mode_id)
        if mode is None:
            mode = self.modes[mode_id] = FailureMode(id=mode_id, type=spec.type, label=spec.label)
        if len(mode.evidence) < MAX_EVIDENCE and where not in mode.evidence:
            mode.evidence.append(where)


def _load(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        event(log, "retrospective_input_skipped", logging.WARNING, path=str(path), reason=str(exc))
        return None
    return data if isinstance(data, dict) else None


def _verdict_files(folder: Path, kind: str) -> list[Path]:
    """``<kind>/NN.json`` of the current run and of archived runs (``runs/<stamp>/<kind>/``)."""
    found = sorted((folder / "runs").glob(f"*/{kind}/[0-9]*.json"))
    return found + sorted((folder / kind).glob("[0-9]*.json"))


def _gate_modes(col: _Collector, folder: Path, kind: str) -> int:
    files = _verdict_files(folder, kind)
    for path in files:
        data = _load(path)
        verdict = (data or {}).get("verdict")
        violations = verdict.get("violations") if isinstance(verdict, dict) else None
        for item in violations if isinstance(violations, list) else []:
            code = str(item.get("code", "")) if isinstance(item, dict) else ""
            spec = fm.GATE_MODES.get(code)
            if spec is not None:
                message = " ".join(str(item.get("message", "")).split())[:160]
                col.add(f"{spec.type}/{code}", spec, f"{_rel(path, folder)}: [{code}] {message}")
    return len(files)


def _skipped_sources(col: _Collector, folder: Path) -> None:
    """Reachable sources still unchecked in the last valid completion report."""

    for path in reversed(sorted((folder / "iterations").glob("[0-9]*.json"))):
        data = _load(path)
        report = extract_report(str((data or {}).get("output", ""))).report
        if report is None:
            continue
        for source in report.unchecked_sources:
            if reachable(source):
                name = source if isinstance(source, str) else source.name
                mode_id, spec = fm.skipped_source_mode(name)
                col.add(mode_id, spec, f"{_rel(path, folder)}: {name} left unchecked")
        return


def _gap_modes(col: _Collector, folder: Path, case_id: str) -> Counter[str]:
    categories: Counter[str] = Counter()
    for report in read_case_reports(folder, case_id):
        categories[report.category] += 1
        spec = fm.GAP_MODES.get(report.category)
        if spec is not None and report.status != "false_positive":
            where = f"{report.path.name}: {report.excerpt(120)}"
            col.add(f"{spec.type}/gap:{report.category}", spec, where)
    return categories


def _rel(path: Path, folder: Path) -> str:
    try:
        return path.relative_to(folder).as_posix()
    except ValueError:
        return path.name


def ended_by(case: Case, reason: str = "") -> str:
    """The case's own end wins (``merged`` over ``closed``); ``reason`` (``finalized``) names
    the end of a case that has none of its own, e.g. one finalized while awaiting approval."""
    if case.status == "merged" or any(t.to == "merged" for t in case.history):
        return "merged"
    if case.status == "closed":
        return "closed"
    return reason or case.status


def build_retrospective(case: Case, folder: Path, *, reason: str = "") -> Retrospective:
    """The retrospective of ``case`` from what is on disk (writes nothing)."""
    col = _Collector()
    iterations = _gate_modes(col, folder, "iterations")
    reviews = _gate_modes(col, folder, "review")
    _skipped_sources(col, folder)
    match = _EXIT.search(case.exit or "")
    if match and match.group(1) in fm.EXIT_MODES:
        spec = fm.EXIT_MODES[match.group(1)]
        col.add(f"{spec.type}/exit:{match.group(1)}", spec, f"case.json: {case.exit}")
    gaps = _gap_modes(col, folder, case.id)
    modes = sorted(col.modes.values(), key=lambda m: (fm.TYPES.index(m.type), m.id))
    return Retrospective(
        case_id=case.id,
        project=case.project,
        status=case.status,
        ended_by=ended_by(case, reason),
        exit=case.exit,
        failure_modes=modes,
        by_type={t: [m.id for m in modes if m.type == t] for t in fm.TYPES},
        harness_gaps=dict(sorted(gaps.items())),
        inputs={"iterations": iterations, "reviews": reviews, "gap_reports": sum(gaps.values())},
        written_at=clock.now(),
    )


def read_retrospective(folder: Path) -> Retrospective | None:
    try:
        return Retrospective.model_validate_json((folder / FILE).read_bytes())
    except (OSError, ValueError):
        return None


def write_retrospective(cfg: Config, case_id: str, *, reason: str = "") -> Path:
    """Write ``retrospective.json`` for ``case_id`` and its summary in ``case.json``; returns
    the file's path. Idempotent: unchanged evidence writes nothing (and syncs nothing).
    mr-monitor calls it when an MR merges, finalize when it ends a case."""
    folder = registry.case_dir(case_id)
    path = folder / FILE
    with registry.update_case(case_id, cfg.harness.thresholds, "retrospective") as case:
        fresh = build_retrospective(case, folder, reason=reason)
        old = read_retrospective(folder)
        if old is not None and old.content() == fresh.content():
            current = old
        else:
            atomic_write_text(path, fresh.model_dump_json(indent=2) + "\n")
            current = fresh
            event(
                log, "retrospective_written", case_id=case_id, project=case.project,
                modes=current.mode_ids(), ended_by=current.ended_by,
            )  # fmt: skip
        summary = {
            "modes": current.mode_ids(),
            "ended_by": current.ended_by,
            "written_at": current.written_at.isoformat(),
        }
        extra = case.__pydantic_extra__
        if extra is not None and extra.get(SUMMARY_KEY) != summary:
            extra[SUMMARY_KEY] = summary
    return path
