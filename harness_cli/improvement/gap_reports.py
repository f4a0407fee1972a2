"""A tolerant reader of ``case-workspaces/<case>/gap_report*.md``.

gap_analyzer writes each report as YAML front matter between ``---`` lines (category,
confidence, evidence, proposed change, target file in the harness repo …) followed by prose.
The reader is deliberately lenient about what a model wrote: key spelling (``proposed change``,
``proposed-change``, ``proposed_change``), confidence as ``0.8``, ``80``, ``"80%"`` or
``high``, evidence as a string or a list. Unknown fields are kept in ``meta``. A file it cannot
read (no front matter, broken YAML, not a mapping) is skipped with a logged warning: one bad
report never stops a finalize or a gap-patterns run.

:func:`triage` is finalize_case's false-positive filter: "Category and confidence filters thin
out the gaps before finalize_case receives them."
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from harness_cli import clock
from harness_cli.errors import ConfigError
from harness_cli.logs import event
from harness_cli.state.store import atomic_write_text

log = logging.getLogger("harness.improvement.gaps")

GLOB = "gap_report*.md"
FENCE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader when present (the same safe subset as ``yaml.safe_load``, ~10x
faster: gap-patterns reads thousands of reports)."""
_WORDS = {"high": 0.9, "medium": 0.6, "med": 0.6, "low": 0.3}
ALIASES: dict[str, tuple[str, ...]] = {
    "category": ("category", "kind", "type"),
    "confidence": ("confidence", "score"),
    "evidence": ("evidence",),
    "proposed_change": ("proposed_change", "proposed_fix", "proposal", "fix", "change"),
    "target_file": ("target_file", "target", "file", "target_path", "path"),
    "created_at": ("created_at", "date", "generated_at", "written_at"),
    "title": ("title", "summary"),
    "status": ("status",),
}
SETTLED = frozenset({"false_positive", "applied"})
"""A report in one of these states is not proposed again (an operator marked it, or an earlier
improvement MR was merged with it)."""


class GapReportError(ValueError):
    """The file is not a readable gap report."""


@dataclass(frozen=True)
class GapReport:
    case_id: str
    path: Path
    meta: dict[str, Any]
    """The front matter, keys lower-cased with ``_`` for spaces and dashes; unknown keys kept."""
    body: str
    category: str
    confidence: float | None
    """0-1, or None when the report gives none (or nothing readable)."""
    evidence: str
    proposed_change: str
    target_file: str
    created_at: datetime | None = None
    title: str = ""
    status: str = "open"
    """``open``; finalize sets ``accepted`` (in an MR) or ``false_positive`` (dropped)."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """``<case_id>/<file name>``: unique across the workspace, stable across runs."""
        return f"{self.case_id}/{self.path.name}"

    def text(self) -> str:
        """What gap-patterns clusters on: category, target, proposal, evidence and prose."""
        return "\n".join(
            p
            for p in (
                self.category.replace("_", " "),
                self.title,
                self.target_file,
                self.proposed_change,
                self.evidence,
                self.body,
            )
            if p
        )

    def excerpt(self, limit: int = 200) -> str:
        """One line for a listing: the title, else the proposal, the evidence, the prose."""
        source = self.title or self.proposed_change or self.evidence or self.body
        flat = " ".join(source.split())
        return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _norm_key(key: object) -> str:
    return re.sub(r"[\s-]+", "_", str(key).strip().lower())


def _first(meta: dict[str, Any], name: str) -> Any:
    for alias in ALIASES[name]:
        if meta.get(alias) not in (None, ""):
            return meta[alias]
    return None


def parse_confidence(value: Any) -> float | None:
    """``0.8``, ``80``, ``"80%"``, ``"0.8"``, ``high|medium|low`` → 0-1; anything else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _WORDS:
            return _WORDS[text]
        percent = text.endswith("%")
        try:
            number = float(text.rstrip("%").strip())
        except ValueError:
            return None
        return _clip(number / 100 if percent or number > 1 else number)
    if isinstance(value, int):  # gap_analyzer writes an int 0-100: 1 is 1 %, not 100 %
        return _clip(value / 100)
    if isinstance(value, float):
        return _clip(value / 100 if value > 1 else value)
    return None


def _clip(value: float) -> float | None:
    return value if 0 <= value <= 1 else None


def _flatten(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return "\n".join(f"- {_flatten(v)}" for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_flatten(v)}" for k, v in value.items())
    return str(value).strip()


def _instant(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return clock.parse_instant(value.isoformat(), source="gap report")
    if isinstance(value, str) and value.strip():
        try:
            return clock.parse_instant(value, source="gap report")
        except ConfigError:
            return None
    return None


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(front matter, prose). Raises GapReportError when there is no readable front matter."""
    stripped = text.lstrip("\ufeff").lstrip()
    if not stripped.startswith("---"):
        raise GapReportError("no front matter (the file must start with a --- line)")
    first = stripped.find("\n")
    if first < 0:
        raise GapReportError("front matter is not closed by a --- line")
    close = FENCE.search(stripped, first + 1)
    if close is None:
        raise GapReportError("front matter is not closed by a --- line")
    try:
        data = yaml.load(stripped[first + 1 : close.start()], Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise GapReportError(f"broken YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise GapReportError("front matter is not a mapping of fields")
    return {_norm_key(k): v for k, v in data.items()}, stripped[close.end() :].strip()


def parse_gap_report(text: str, *, case_id: str, path: Path) -> GapReport:
    meta, body = split_front_matter(text)
    known = {alias for names in ALIASES.values() for alias in names}
    return GapReport(
        case_id=case_id,
        path=path,
        meta=meta,
        body=body,
        category=_norm_key(_first(meta, "category") or "uncategorized"),
        confidence=parse_confidence(_first(meta, "confidence")),
        evidence=_flatten(_first(meta, "evidence")),
        proposed_change=_flatten(_first(meta, "proposed_change")),
        target_file=_flatten(_first(meta, "target_file")),
        created_at=_instant(_first(meta, "created_at")),
        title=_flatten(_first(meta, "title")),
        status=_norm_key(_first(meta, "status") or "open"),
        extra={k: v for k, v in meta.items() if k not in known},
    )


def _natural(name: str) -> tuple[int, str]:
    digits = re.findall(r"\d+", name)
    return (int(digits[-1]) if digits else -1, name)


def read_case_reports(case_dir: Path, case_id: str | None = None) -> list[GapReport]:
    """The case's readable gap reports, oldest number first; broken ones are logged, skipped."""
    owner = case_id or case_dir.name
    try:
        names = sorted(
            (e.name for e in os.scandir(case_dir) if e.is_file() and _is_gap_name(e.name)),
            key=_natural,
        )
    except (FileNotFoundError, NotADirectoryError):
        return []
    found: list[GapReport] = []
    for name in names:
        path = case_dir / name
        try:
            text = path.read_text(encoding="utf-8")
            found.append(parse_gap_report(text, case_id=owner, path=path))
        except (OSError, UnicodeDecodeError, GapReportError) as exc:
            event(
                log, "gap_report_skipped", logging.WARNING, case_id=owner, path=str(path),
                reason=str(exc),
            )  # fmt: skip
    return found


def _is_gap_name(name: str) -> bool:
    return name.startswith("gap_report") and name.endswith(".md")


def has_reports(case_dir: Path) -> bool:
    try:
        return any(_is_gap_name(e.name) for e in os.scandir(case_dir))
    except (FileNotFoundError, NotADirectoryError):
        return False


def read_all_reports(cases_root: Path) -> list[GapReport]:
    """Every readable gap report of every case, ordered by (case id, report number)."""
    try:
        folders = sorted(e.name for e in os.scandir(cases_root) if e.is_dir())
    except FileNotFoundError:
        return []
    found: list[GapReport] = []
    for name in folders:
        found += read_case_reports(cases_root / name, name)
    return found


@dataclass(frozen=True)
class Dropped:
    report: GapReport
    reason: str


def triage(
    reports: Iterable[GapReport], *, min_confidence: float, categories: Iterable[str]
) -> tuple[list[GapReport], list[Dropped]]:
    """(kept, dropped): finalize's false-positive filter. A report is dropped when it is
    already settled (``false_positive``, ``applied``), its category is out of scope, or its
    confidence is missing or under ``min_confidence``."""
    scope = {_norm_key(c) for c in categories}
    kept: list[GapReport] = []
    dropped: list[Dropped] = []
    for report in reports:
        if report.status in SETTLED:
            dropped.append(Dropped(report, f"already {report.status.replace('_', ' ')}"))
        elif report.category not in scope:
            dropped.append(Dropped(report, f"category {report.category!r} is out of scope"))
        elif report.confidence is None:
            dropped.append(Dropped(report, "no readable confidence"))
        elif report.confidence < min_confidence:
            dropped.append(
                Dropped(
                    report,
                    f"confidence {report.confidence:.2f} is under {min_confidence:.2f}",
                )
            )
        else:
            kept.append(report)
    return kept, dropped


_STATUS_LINE = re.compile(r"^status:.*$", re.MULTILINE)


def set_status(report: GapReport, status: str) -> bool:
    """Record finalize's verdict in the report's own front matter (``status: accepted`` or
    ``false_positive``), touching only that line. False when the file changed under us or
    already says so; the prose and every other field stay byte for byte."""
    try:
        text = report.path.read_text(encoding="utf-8")
        meta, _ = split_front_matter(text)
    except (OSError, UnicodeDecodeError, GapReportError):
        return False
    if _norm_key(meta.get("status") or "") == status:
        return False
    start = text.find("\n", text.find("---")) + 1
    close = FENCE.search(text, start)
    if close is None:
        return False
    front = text[start : close.start()]
    line = f"status: {status}"
    updated = _STATUS_LINE.sub(line, front, count=1) if "status" in meta else front + line + "\n"
    atomic_write_text(report.path, text[:start] + updated + text[close.start() :])
    return True
