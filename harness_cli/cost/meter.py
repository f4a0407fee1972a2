"""Record every model call once, in an append-only log cheap to sum.

One JSON line per call in ``$HARNESS_HOME/logs/cost/<YYYY-MM-DD>.jsonl`` (the UTC day of the
call, ``HARNESS_NOW`` honoured), written with one ``O_APPEND`` write: lines of concurrent runs
never interleave and nothing is rewritten, so a crash loses at most the call in flight. A
day's file is opened only when the question covers that day.

Whose call it is comes from ``scope(...)``: the workflow edge sets case, project, workflow
and run (``commands/_workflow.running``); the investigation loop adds the iteration. The
runtime wrapper (``agents/metered.py``) calls ``record`` after every run — the one choke point.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from harness_cli import clock, paths
from harness_cli.errors import HarnessError
from harness_cli.workspace import registry

_SCOPE: ContextVar[dict[str, Any] | None] = ContextVar("harness_cost_scope", default=None)
SCOPE_KEYS = ("case", "project", "workflow", "run", "iteration")


def log_dir() -> Path:
    return paths.logs_dir() / "cost"


@contextlib.contextmanager
def scope(**fields: Any) -> Iterator[dict[str, Any]]:
    """``with scope(case="AAA-1", workflow="investigate", run="…"):`` — every call recorded
    inside carries these fields (nested scopes add to the outer one; None leaves a field)."""
    unknown = set(fields) - set(SCOPE_KEYS)
    if unknown:
        raise TypeError(f"unknown cost scope field(s): {sorted(unknown)}")
    merged = {**current(), **{k: v for k, v in fields.items() if v is not None}}
    token = _SCOPE.set(merged)
    try:
        yield merged
    finally:
        _SCOPE.reset(token)


def current() -> dict[str, Any]:
    return dict(_SCOPE.get() or {})


@dataclass
class Tally:
    """Sums over a set of calls."""

    calls: int = 0
    input: int = 0
    output: int = 0
    cache_write: int = 0
    cache_read: int = 0
    usd: float = 0.0

    @property
    def tokens(self) -> int:
        return self.input + self.output + self.cache_write + self.cache_read

    def add_line(self, line: dict[str, Any]) -> None:
        self.calls += 1
        self.input += line.get("in", 0)
        self.output += line.get("out", 0)
        self.cache_write += line.get("cw", 0)
        self.cache_read += line.get("cr", 0)
        self.usd += line.get("usd", 0.0)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "usd": round(self.usd, 6), "tokens": self.tokens}

    def text(self) -> str:
        return f"${self.usd:.4f} · {self.tokens:,} tokens · {self.calls} call(s)"


_RUNS: dict[str, Tally] = {}
"""What each workflow run of this process has spent (the per-run budget reads it)."""


def record(
    *,
    role: str,
    model: str,
    runtime: str,
    input_tokens: int,
    output_tokens: int,
    cache_write_tokens: int,
    cache_read_tokens: int,
    usd: float,
    reported: bool,
    seconds: float,
    turns: int = 1,
    at: datetime | None = None,
) -> dict[str, Any]:
    """Append one call (one runtime run: ``turns`` API requests of one session) to the day's
    log and to its run's tally; returns the line written."""
    now = (at or clock.now()).astimezone(UTC)
    line: dict[str, Any] = {
        "ts": now.isoformat(timespec="seconds"),
        **current(),
        "role": role,
        "model": model,
        "rt": runtime,
        "in": int(input_tokens),
        "out": int(output_tokens),
        "cw": int(cache_write_tokens),
        "cr": int(cache_read_tokens),
        "usd": round(float(usd), 8),
        "rep": bool(reported),
        "s": round(seconds, 3),
        "turns": int(turns),
    }
    append(line, now.date())
    run = line.get("run")
    if run:
        _RUNS.setdefault(str(run), Tally()).add_line(line)
    return line


_MADE: set[Path] = set()


def append(line: dict[str, Any], day: date) -> None:
    folder = log_dir()
    if folder not in _MADE:
        folder.mkdir(parents=True, exist_ok=True)
        _MADE.add(folder)
    data = (json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n").encode()
    path = folder / f"{day.isoformat()}.jsonl"
    new_day = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    if new_day:
        _sum_finished_days(folder, day)


def _sum_finished_days(folder: Path, today: date) -> None:
    """The first call of a day sums the days before it that have no index yet (normally just
    yesterday: a few milliseconds per thousand calls, once a day), so `harness cost` reads
    finished days from ``.index/`` and parses only today's lines. Best effort: a model call
    never fails for an index (`harness cost` sums an unindexed day itself)."""
    with contextlib.suppress(OSError, ValueError):
        for path in folder.glob("*.jsonl"):
            if path.stem < today.isoformat() and not _indexed(path):
                _cells(path, "", "", Report(since=None))


def _indexed(path: Path) -> bool:
    """An index written after the day file last changed (two stats: this runs over every day
    file once a day; ``_cells`` still checks the index's stamp before trusting it)."""
    try:
        index = os.stat(path.parent / ".index" / f"{path.stem}.json")
        return index.st_mtime_ns >= os.stat(path).st_mtime_ns
    except OSError:
        return False


def run_tally(run: str | None) -> Tally:
    return _RUNS.get(run or "", Tally())


_DAY_CACHE: dict[Path, tuple[int, Tally]] = {}


def day_tally(day: date | None = None) -> Tally:
    """What this machine spent on ``day`` (today by default), read incrementally: only the
    bytes appended since the last look are parsed."""
    path = log_dir() / f"{(day or clock.now().astimezone(UTC).date()).isoformat()}.jsonl"
    offset, tally = _DAY_CACHE.get(path, (0, Tally()))
    try:
        if os.stat(path).st_size == offset:  # nothing appended since the last look
            return Tally(**asdict(tally))
        with path.open("rb") as handle:
            handle.seek(offset)
            chunk = handle.read()
    except FileNotFoundError:
        return Tally()
    end = chunk.rfind(b"\n") + 1  # a line still being written is read next time
    tally = Tally(**asdict(tally))
    for raw in chunk[:end].splitlines():
        with contextlib.suppress(ValueError):
            tally.add_line(json.loads(raw))
    _DAY_CACHE[path] = (offset + end, tally)
    return tally


GROUPS = ("day", "project", "case", "workflow", "role", "model", "iteration")
"""``iteration``: an investigation iteration of one case, keyed ``CASE #N``; calls made outside
any iteration (a review, a dev-agent run) sum under ``-``."""


@dataclass
class Report:
    """``harness cost``'s answer: the total and the same sums per day, project, case,
    workflow, role, model and iteration."""

    since: str | None
    total: Tally = field(default_factory=Tally)
    groups: dict[str, dict[str, Tally]] = field(default_factory=lambda: {g: {} for g in GROUPS})
    unreadable_lines: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "since": self.since,
            "total": self.total.to_json(),
            **{
                f"by_{g}": {k: t.to_json() for k, t in sorted(rows.items())}
                for g, rows in self.groups.items()
            },
            "unreadable_lines": self.unreadable_lines,
        }


_KEYS = ("project", "case", "workflow", "role", "model")
_ITER_KEYS = ("project", "case", "workflow", "iteration")
_INDEX_VERSION = 2
"""Bumped when a cell's key changes: an index of another version is rebuilt."""
_FIELDS = ("in", "out", "cw", "cr", "usd")
Cell = list[float]
"""calls, in, out, cw, cr, usd of one (day, project, case, workflow, role, model)."""


Cells = dict[tuple[str, ...], Cell]


def _cells(path: Path, low: str, high: str, report: Report) -> tuple[Cells, Cells]:
    """One day file summed per key tuple (the rows it has, not its lines): per ``_KEYS``, and
    per ``_ITER_KEYS`` apart (an iteration column in the first would make it nearly as long as
    the file). A whole finished day is read once and kept beside it (``.index/<day>.json``,
    keyed by size and mtime)."""
    whole = not low and not high
    today = clock.now().astimezone(UTC).date().isoformat()
    index = path.parent / ".index" / f"{path.stem}.json"
    stat = os.stat(path)
    stamp = [stat.st_size, stat.st_mtime_ns]
    if whole and path.stem < today:
        with contextlib.suppress(OSError, ValueError, TypeError):
            cached = json.loads(index.read_text(encoding="utf-8"))
            if cached["stamp"] == stamp and cached.get("v") == _INDEX_VERSION:
                report.unreadable_lines += int(cached.get("unreadable", 0))
                return ({tuple(k): v for k, v in cached["cells"]},
                        {tuple(k): v for k, v in cached["iters"]})  # fmt: skip
    lines, unreadable = _parse(path.read_bytes())
    if not whole:
        lines = [x for x in lines if not (low and x.get("ts", "") < low)
                 and not (high and x.get("ts", "") >= high)]  # fmt: skip
    # Summed per raw key first (no str() or label per line: a cold day of thousands of calls
    # is the cost of `harness cost`), then merged under the labels (a few rows per case).
    raw: dict[tuple[Any, ...], Cell] = {}
    for line in lines:
        g = line.get
        key = (g("project"), g("case"), g("workflow"), g("role"), g("model"), g("iteration"))
        cell = raw.get(key)
        if cell is None:
            cell = raw[key] = [0, 0, 0, 0, 0, 0.0]
        cell[0] += 1
        cell[1] += g("in", 0)
        cell[2] += g("out", 0)
        cell[3] += g("cw", 0)
        cell[4] += g("cr", 0)
        cell[5] += g("usd", 0.0)
    cells: Cells = {}
    iters: Cells = {}
    for (p, c, w, r, m, i), cell in raw.items():
        p, c, w = str(p or "-"), str(c or "-"), str(w or "-")
        _merge(cells, (p, c, w, str(r or "-"), str(m or "-")), cell)  # = _KEYS, in order
        _merge(iters, (p, c, w, _iteration(c, i)), cell)  # = _ITER_KEYS
    report.unreadable_lines += unreadable
    if whole and path.stem < today:
        with contextlib.suppress(OSError):
            index.parent.mkdir(exist_ok=True)
            data = {"v": _INDEX_VERSION, "stamp": stamp, "unreadable": unreadable,
                    "cells": [[list(k), v] for k, v in cells.items()],
                    "iters": [[list(k), v] for k, v in iters.items()]}  # fmt: skip
            tmp = index.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data), encoding="utf-8")
            os.replace(tmp, index)
    return cells, iters


def _merge(into: dict[Any, Cell], key: Any, cell: Cell) -> None:
    acc = into.get(key)
    if acc is None:
        into[key] = list(cell)
    else:
        for n in range(6):
            acc[n] += cell[n]


def _iteration(case: Any, iteration: Any) -> str:
    return "-" if iteration is None or iteration == "" else f"{case or '-'} #{iteration}"


def _parse(data: bytes) -> tuple[list[dict[str, Any]], int]:
    """A day file's lines, parsed as one JSON array (one call, several times faster than a
    call per line); a file with a torn or foreign line falls back to line by line, counting
    what it cannot read."""
    body = data.rstrip(b"\n")
    if not body:
        return [], 0
    with contextlib.suppress(ValueError):
        parsed = json.loads(b"[" + body.replace(b"\n", b",") + b"]")
        if all(isinstance(x, dict) for x in parsed):
            return parsed, 0
    lines, unreadable = [], 0
    for raw in body.split(b"\n"):
        try:
            line = json.loads(raw)
        except ValueError:
            unreadable += 1
            continue
        if isinstance(line, dict):
            lines.append(line)
        else:
            unreadable += 1
    return lines, unreadable


def _tally(cell: Cell) -> Tally:
    return Tally(int(cell[0]), int(cell[1]), int(cell[2]), int(cell[3]), int(cell[4]), cell[5])


def totals(
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    project: str | None = None,
    case: str | None = None,
    workflow: str | None = None,
) -> Report:
    """Sum the logged calls in ``[since, until)``, optionally of one project, case or
    workflow. Day files outside the window are not opened; a day wholly inside it is summed
    once and kept summed (``.index/``), so a month of calls costs a few milliseconds."""
    since = since.astimezone(UTC) if since else None
    until = until.astimezone(UTC) if until else None
    report = Report(since=since.isoformat() if since else None)
    first = since.date().isoformat() if since else ""
    last = until.date().isoformat() if until else "9999"
    total: Cell = [0, 0, 0, 0, 0, 0.0]
    sums: dict[str, dict[str, Cell]] = {g: {} for g in GROUPS}
    for path in sorted(log_dir().glob("*.jsonl")):
        day = path.stem
        if day < first or day > last:
            continue
        # only the first and the last day of the window need their lines' own instants
        low = since.isoformat(timespec="seconds") if since and day == first else ""
        high = until.isoformat(timespec="seconds") if until and day == last else ""
        cells, iters = _cells(path, low, high, report)
        for (p, c, w, i), cell in iters.items():
            if (project and p != project) or (case and c != case) or (workflow and w != workflow):
                continue
            _merge(sums["iteration"], i, cell)
        for key, cell in cells.items():
            p, c, w, r, m = key
            if (project and p != project) or (case and c != case) or (workflow and w != workflow):
                continue
            for name, label in (("day", day), ("project", p), ("case", c), ("workflow", w),
                                ("role", r), ("model", m), ("", "")):  # fmt: skip
                acc = sums[name].get(label) if name else total
                if acc is None:
                    acc = sums[name][label] = [0, 0, 0, 0, 0, 0.0]
                acc[0] += cell[0]
                acc[1] += cell[1]
                acc[2] += cell[2]
                acc[3] += cell[3]
                acc[4] += cell[4]
                acc[5] += cell[5]
    report.total = _tally(total)
    report.groups = {g: {k: _tally(v) for k, v in rows.items()} for g, rows in sums.items()}
    return report


def spend_line(case_id: str | None = None) -> str:
    """One line for a terminal message: this run's spend and the case's total so far
    (case.json's running total plus this run, which is added to it when the run ends).
    Empty when nothing was ever metered for either (no model call: no figure to state)."""
    run = run_tally(current().get("run"))
    parts = [f"this run {run.text()}"] if run.calls else []
    if case_id:
        try:
            cost = registry.load_case(case_id).cost or {}
        except HarnessError:
            cost = {}
        if run.calls or int(cost.get("calls", 0)):
            before = float(cost.get("usd", 0.0))
            parts.append(f"case {case_id} so far ${before + run.usd:.4f}")
    return "Cost: " + "; ".join(parts) if parts else ""
