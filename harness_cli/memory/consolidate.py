"""Memory consolidation: fold the followup transcripts into TASK.md, so later turns stop
feeding them raw. "Skipping consolidation lets prompts outgrow the model's context window.
Doing it risks compressing too hard and losing information, and that really happened: a 14KB
document shrank to 587 bytes." The three protections that came out of it, all here:

1. the consolidator's template says UPDATE, not REWRITE (``prompts/consolidator.md``);
2. the output-size guard: a proposal under ``output_size_guard_ratio`` of the TASK.md it would
   replace is refused — logged, the operator told, the old TASK.md kept, the proposal saved
   under ``consolidation/`` for a human to look at;
3. the per-case lockfile: the ``consolidate`` workflow lock, so two runs never race (the second
   exits 3); the write itself also happens under the case lock, and only if TASK.md is still
   the one the consolidator read.

The agent proposes; the harness writes. The replaced TASK.md is kept under ``consolidation/``.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness_cli import clock
from harness_cli.config import Config, load_config
from harness_cli.dispatch import journal
from harness_cli.dispatch import run as runs
from harness_cli.errors import EXIT_REFUSED
from harness_cli.logs import event
from harness_cli.loop.prompts import render
from harness_cli.memory import state as memstate
from harness_cli.memory import transcripts
from harness_cli.memory.notify import tell_operator
from harness_cli.memory.runner import build
from harness_cli.memory.thresholds import MemoryThresholds, thresholds_from
from harness_cli.memory.transcripts import Transcript
from harness_cli.memory.trigger import evaluate
from harness_cli.outbox.doors import Doors
from harness_cli.outbox.outbound import Outbound
from harness_cli.result import Result
from harness_cli.state.locks import case_lock
from harness_cli.state.store import atomic_write_text
from harness_cli.workspace import registry

log = logging.getLogger("harness.memory")

_BLOCK = re.compile(r"<task_md>\s*\n?(.*?)\s*</task_md>", re.DOTALL)
Outcome = Literal["written", "refused", "skipped"]


@dataclass
class Consolidation:
    case_id: str
    outcome: Outcome
    signals: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    transcripts: list[str] = field(default_factory=list)
    bytes_before: int = 0
    bytes_after: int = 0
    note: str = ""
    saved: str | None = None
    """Where the replaced TASK.md (written) or the refused proposal (refused) was kept."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def extract_task_md(answer: str) -> str | None:
    """The last complete ``<task_md>…</task_md>`` block; None when there is none (a cut-off
    answer has no closing tag, and a cut-off TASK.md is exactly what must not be written)."""
    found = _BLOCK.findall(answer or "")
    return found[-1].strip() + "\n" if found and found[-1].strip() else None


def size_guard(old: str, proposed: str, ratio: float) -> str | None:
    """Why the proposal is refused, or None. Sizes in bytes of UTF-8."""
    before, after = len(old.encode()), len(proposed.encode())
    if before and after < ratio * before:
        return f"the proposed TASK.md is {after} B, under {ratio:.0%} of the current {before} B"
    return None


def batch(pending: list[Transcript], budget_chars: int) -> list[Transcript]:
    """The oldest transcripts that fit the consolidator's input budget (at least one)."""
    chosen: list[Transcript] = []
    used = 0
    for item in pending:
        if chosen and used + len(item.body) > budget_chars:
            break
        chosen.append(item)
        used += len(item.body)
    return chosen


def consolidate_workflow(run: runs.Run) -> runs.Outcome:
    """The consolidate workflow's entry for one case (``--force``: in ``run.options``)."""
    done = consolidate_case(
        run.case_id, cfg=load_config(), force=bool(run.options.get("force")),
        trigger_kind=run.trigger_kind, doors=run.doors, out=run.doors.out if run.post else None,
    )  # fmt: skip
    outcome = runs.Outcome("consolidate", data=done.to_json())
    report(outcome, done)
    if done.outcome == "refused":
        outcome.exit_code = EXIT_REFUSED
    return outcome


def report(result: Result, done: Consolidation) -> None:
    """What one consolidation says in the command's result (one case, or each of a sweep)."""
    if done.outcome == "written":
        result.changed.append(
            f"{done.case_id}: TASK.md {done.bytes_before} B → {done.bytes_after} B from "
            f"{len(done.transcripts)} transcript(s) ({', '.join(done.signals) or 'forced'})"
        )
    elif done.outcome == "refused":
        result.errors.append(f"{done.case_id}: refused — {done.note}; TASK.md kept")
    else:
        reason = done.note or "; ".join(done.reasons)
        result.skipped.append(f"{done.case_id}: {reason}")


def consolidate_case(
    case_id: str,
    *,
    cfg: Config,
    force: bool = False,
    trigger_kind: str | None = None,
    doors: Doors,
    out: Outbound | None = None,
) -> Consolidation:
    """One consolidation of one case, if its trigger fires (or ``force``). The caller holds
    the ``consolidate`` workflow lock. ``out``: where the operator is told of a refusal."""
    limits = thresholds_from(cfg.harness)
    case = registry.load_case(case_id)
    folder = registry.case_dir(case_id)
    memory = memstate.load(folder)
    pending = transcripts.unconsolidated(folder)
    check = evaluate(
        limits,
        now=clock.now(),
        state=memory,
        pending=pending,
        case=case,
        trigger_kind=trigger_kind,
        force=force,
    )
    result = Consolidation(case_id, "skipped", check.fired, check.reasons)
    if not pending or not (check.fires or force):
        event(log, "consolidation_not_due", case_id=case_id, reasons=check.reasons)
        return result
    chosen = batch(pending, limits.consolidate_input_budget_chars)
    result.transcripts = [t.path.name for t in chosen]
    task_path = folder / "TASK.md"
    written = _written_before(task_path, pending)
    if written is not None:  # a killed run wrote TASK.md: finish its tail, ask no model again
        chosen, result.bytes_before, result.bytes_after, result.saved, into = written
        result.transcripts = [t.path.name for t in chosen]
        return _mark(cfg, case_id, folder, result, chosen, into)
    old = task_path.read_text(encoding="utf-8") if task_path.exists() else ""
    result.bytes_before = len(old.encode())
    ask = build(cfg, folder, case.project, limits, doors.runtime)
    answer = ask("consolidator", _prompt(cfg, case_id, case.project, old, chosen, limits))
    proposed = extract_task_md(answer)
    why = (
        "the answer has no complete <task_md>…</task_md> block"
        if proposed is None
        else size_guard(old, proposed, limits.output_size_guard_ratio)
    )
    result.bytes_after = len((proposed or "").encode())
    if why is not None:
        return _refuse(cfg, case_id, case.kind, folder, result, why, proposed or answer, out)
    assert proposed is not None
    stamp = clock.stamp()
    with case_lock(case_id, timeout=cfg.harness.thresholds.lock_timeout_seconds):
        current = task_path.read_text(encoding="utf-8") if task_path.exists() else ""
        if current != old:
            result.note = "TASK.md changed while the consolidator ran; nothing written"
            event(log, "consolidation_conflict", logging.WARNING, case_id=case_id)
            return result
        if old:
            backup = folder / "consolidation" / f"{stamp}-TASK.before.md"
            atomic_write_text(backup, old)
            result.saved = str(backup.relative_to(folder))
        atomic_write_text(task_path, proposed)
    into = _into(proposed)
    _checkpoint("task_written", {"into": into, "result": result.to_json()})
    return _mark(cfg, case_id, folder, result, chosen, into)


def _into(task_md: str) -> str:
    return f"TASK.md@{hashlib.sha256(task_md.encode()).hexdigest()[:12]}"


def _written_before(
    task_path: Path, pending: list[Transcript]
) -> tuple[list[Transcript], int, int, str | None, str] | None:
    """What the dead run this one resumes wrote: its ``task_written`` checkpoint, if TASK.md is
    still the one it wrote and its transcripts are still unmarked (then only the marking, the
    record and the commit are left)."""

    run = journal.current()
    done = run.recall("task_written") if run is not None else None
    if not isinstance(done, dict) or (run is not None and run.recall("marked")):
        return None
    current = task_path.read_text(encoding="utf-8") if task_path.exists() else ""
    if _into(current) != done.get("into"):
        return None  # TASK.md moved on since: consolidate afresh
    before = done.get("result") or {}
    names = set(before.get("transcripts") or [])
    chosen = [t for t in pending if t.path.name in names]
    if not chosen:
        return None
    return (
        chosen,
        int(before.get("bytes_before", 0)),
        int(before.get("bytes_after", 0)),
        before.get("saved"),
        str(done["into"]),
    )


def _mark(
    cfg: Config,
    case_id: str,
    folder: Path,
    result: Consolidation,
    chosen: list[Transcript],
    into: str,
) -> Consolidation:
    """The tail of a written consolidation: transcripts marked, the consolidation remembered,
    the case folder committed."""
    now = clock.now()
    transcripts.mark_consolidated(chosen, now, into)
    result.outcome = "written"
    _remember(case_id, folder, result, now, refused=False)
    _checkpoint("marked")
    event(
        log,
        "consolidation_written",
        case_id=case_id,
        signals=result.signals,
        transcripts=result.transcripts,
        bytes_before=result.bytes_before,
        bytes_after=result.bytes_after,
    )
    registry.sync(
        f"case {case_id}: consolidated {len(chosen)} transcript(s) into TASK.md",
        cfg.harness.thresholds,
        only=[folder],
    )
    return result


def _checkpoint(name: str, value: Any = True) -> None:
    run = journal.current()
    if run is not None:
        run.checkpoint(name, value)


def _refuse(
    cfg: Config,
    case_id: str,
    kind: str,
    folder: Path,
    result: Consolidation,
    why: str,
    proposal: str,
    out: Outbound | None,
) -> Consolidation:
    saved = folder / "consolidation" / f"{clock.stamp()}-refused.md"
    atomic_write_text(saved, proposal)
    result.outcome, result.note = "refused", why
    result.saved = str(saved.relative_to(folder))
    _remember(case_id, folder, result, clock.now(), refused=True)
    event(
        log,
        "consolidation_refused",
        logging.WARNING,
        case_id=case_id,
        reason=why,
        bytes_before=result.bytes_before,
        bytes_after=result.bytes_after,
        saved=result.saved,
    )
    tell_operator(
        cfg,
        out,
        case_id,
        kind,
        f"Consolidation of TASK.md refused for {case_id}: {why}. TASK.md is unchanged and the "
        f"{len(result.transcripts)} transcript(s) stay unconsolidated; the proposal is in "
        f"{result.saved}. Run `harness consolidate {case_id} --force` once TASK.md is right.",
    )
    registry.sync(f"case {case_id}: consolidation refused", cfg.harness.thresholds, only=[folder])
    return result


def _remember(case_id: str, folder: Path, result: Consolidation, at: Any, *, refused: bool) -> None:
    with memstate.update(case_id, folder) as memory:
        memory.consolidations.append(
            memstate.ConsolidationRecord(
                at=at,
                outcome=result.outcome,
                signals=result.signals,
                transcripts=result.transcripts,
                bytes_before=result.bytes_before,
                bytes_after=result.bytes_after,
                note=result.note,
            )
        )
        memory.consolidations = memory.consolidations[-50:]
        if refused:
            memory.last_refused_at = at
        else:
            memory.last_consolidated_at = at
            memory.last_refused_at = None


def _prompt(
    cfg: Config,
    case_id: str,
    project: str,
    old: str,
    chosen: list[Transcript],
    limits: MemoryThresholds,
) -> str:

    before = len(old.encode())
    return render(
        cfg,
        "consolidator",
        case_id=case_id,
        project=project,
        task_bytes=str(before),
        min_bytes=str(int(before * limits.output_size_guard_ratio)),
        task_md=old.strip() or "(TASK.md is empty: start one from the transcripts)",
        transcript_names=", ".join(t.path.name for t in chosen),
        transcripts="\n\n".join(f"### {t.path.name}\n{t.body.strip()}" for t in chosen),
    )
