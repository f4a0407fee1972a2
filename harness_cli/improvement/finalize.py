"""finalize_case: an idle case's gap reports → the false positives dropped → one MR against the
harness's own repository.

Reference: "Once a case has been idle for four hours, or an operator runs admin: finalize
<case>, it gathers every gap report, drops the false positives and opens a single MR with the
fixes that survived. That MR targets the harness codebase and not the ticket's original repo."

- Idle: ``now - last activity >= thresholds.finalize_idle_hours`` on the harness clock
  (``HARNESS_NOW``); last activity is the newest of every activity the harness saw on the
  case: ``case.json``'s ``updated_at``, its gap reports, its followup turns, the replies read
  in its Slack threads and the events of its MRs. Only cases with gap reports are ever due.
- Filters: :func:`gap_reports.triage` (category in scope, confidence at or above the bar).
- Input: the case's surviving gaps, plus the largest gap-patterns clusters no finalize has
  taken yet (``$HARNESS_HOME/gap-patterns.json``).
- Outcome in ``patch-pr-state.json``: ``open`` (MR url), ``no_gaps``, ``failed``; mr-monitor
  moves ``open`` to ``merged``/``closed``. Merging stays a human act.
- Idempotent: a case with an MR (open, merged or closed) is never finalized again; a
  ``no_gaps`` case only when new gap reports appeared since; a ``failed`` one when asked by
  name (``--due`` leaves it to the operator). Each end writes the case's retrospective.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harness_cli import clock
from harness_cli.config import Config, load_config
from harness_cli.dispatch import journal
from harness_cli.dispatch.run import Outcome, Run
from harness_cli.errors import EXIT_REFUSED, HarnessError, LockHeld, PolicyRefused
from harness_cli.improvement import gap_patterns, gap_reports, patch_suggester
from harness_cli.improvement.retrospective import write_retrospective
from harness_cli.improvement.thresholds import ImprovementThresholds, thresholds_from
from harness_cli.logs import event
from harness_cli.memory import transcripts
from harness_cli.outbox.doors import Doors
from harness_cli.outbox.outbound import Outbound
from harness_cli.outbox.slack_door import Owed
from harness_cli.services.gitlab import GitLab
from harness_cli.services.runtime import Runtime
from harness_cli.sessions.waiting import AwaitingApproval
from harness_cli.state import files
from harness_cli.state.locks import workflow_lock
from harness_cli.state.models import PatchPrEntry
from harness_cli.state.store import atomic_write_json
from harness_cli.workspace import registry
from harness_cli.workspace.case import Case

log = logging.getLogger("harness.improvement.finalize")

WITH_MR = frozenset({"open", "merged", "closed"})
"""An improvement MR exists (or existed) for the case: finalize never runs on it again."""
MEASURE_EVAL = "measure_eval"
"""The ``run.options`` key of the eval the improvement MR states (``patch_suggester.MeasureEval``):
``harness finalize`` hands down ``eval.before_after.measure_for_mr``, since the eval is a tool
beside the edge, which no layer imports."""


@dataclass
class Services:
    """The run's doors (each built on first use: a ``--due`` run with nothing due builds none),
    and the eval the improvement MR states, handed down by the edge."""

    doors: Doors
    measure_eval: patch_suggester.MeasureEval

    @property
    def gitlab(self) -> GitLab:
        return self.doors.forge

    @property
    def out(self) -> Outbound:
        return self.doors.out

    @property
    def runtime(self) -> Runtime:
        return self.doors.runtime


@dataclass
class FinalizeOutcome:
    case_id: str
    status: str
    """``open``, ``no_gaps``, ``failed``; ``skipped`` (already done); ``not_due``; ``locked``;
    ``denied`` (another work session holds the case: the message names it); ``waiting``."""
    message: str
    mr_url: str = ""
    kept: list[str] = field(default_factory=list)
    dropped: list[dict[str, str]] = field(default_factory=list)
    clusters: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    owed: list[str] = field(default_factory=list)
    """Messages Slack refused for now: recorded in the outbox, delivered by a later run."""

    @property
    def changed(self) -> bool:
        return self.status in ("open", "no_gaps", "failed")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _reports_of(entry: PatchPrEntry | None) -> set[str]:
    value = (entry.model_extra or {}).get("reports") if entry is not None else None
    return {str(v) for v in value} if isinstance(value, list) else set()


def _skip_reason(entry: PatchPrEntry | None, names: list[str], *, due: bool) -> str | None:
    """Why this case is not finalized (again), or None to go ahead."""
    if entry is None or entry.status == "pending":  # pending + our lock: a run that crashed
        return None
    if entry.status in WITH_MR:
        return f"already finalized: improvement MR {entry.status} {entry.mr_url}".rstrip()
    if entry.status == "no_gaps":
        if set(names) - _reports_of(entry):
            return None
        return f"already finalized: no gap survived the filters ({entry.detail})"
    if entry.status == "failed" and due:
        return f"finalize failed earlier ({entry.detail}); `harness finalize CASE` retries it"
    return None


def _record(
    case_id: str,
    status: str,
    *,
    mr_url: str = "",
    detail: str = "",
    reports: list[str] | None = None,
) -> None:
    with files.patch_pr_state().update() as state:
        state.cases[case_id] = PatchPrEntry.model_validate(
            {"status": status, "mr_url": mr_url, "updated_at": clock.now(), "detail": detail,
             "reports": reports or []}
        )  # fmt: skip


def finalize_workflow(run: Run) -> Outcome:
    """The finalize workflow's entry for one case; an "already finalized" is DMed too when
    the run came from ``admin: finalize`` (a payload), whose author waits for an answer."""
    cfg = load_config()
    services = Services(run.doors, run.options[MEASURE_EVAL])
    done = finalize_case(cfg, run.case_id, services, thresholds_from(cfg.harness),
                         notify=run.post, tell_skip=run.payload is not None)  # fmt: skip
    return summarize([done], due=False)


def summarize(outcomes: list[FinalizeOutcome], *, due: bool) -> Outcome:
    """What one finalize run, or a ``--due`` sweep, says: an MR opened or nothing to propose
    is a change; a failure exits 1; a held reservation exits 4 (it runs once its holder is
    done)."""
    result = Outcome("finalize", data={"cases": [o.to_json() for o in outcomes]})
    for o in outcomes:
        line = f"{o.case_id}: {o.message}"
        if o.status in ("open", "no_gaps"):
            result.changed.append(line)
        elif o.status == "failed":
            result.errors.append(line)
        else:
            result.skipped.append(line)
        result.errors += [f"{o.case_id}: {e}" for e in o.errors]
    if due and not outcomes:
        result.messages.append("no case with gap reports is due")
    if any(o.status == "failed" for o in outcomes):
        result.exit_code = 1
    elif any(o.status == "denied" for o in outcomes):
        result.exit_code = EXIT_REFUSED
    return result


def finalize_case(
    cfg: Config,
    case_id: str,
    services: Services,
    th: ImprovementThresholds,
    *,
    due: bool = False,
    notify: bool = True,
    tell_skip: bool = False,
) -> FinalizeOutcome:
    """Finalize one case. The caller holds the ``finalize`` workflow lock of the case.
    ``tell_skip``: an "already finalized" is DMed too (the run came from ``admin: finalize``,
    whose author waits for an answer in Slack). A "nothing to propose" from the cron sweep
    (``due``) pings nobody (#16: it is in finalize.json and the logs)."""
    case = registry.load_case(case_id)
    folder = registry.case_dir(case_id)
    reports = gap_reports.read_case_reports(folder, case_id)
    names = [r.path.name for r in reports]
    entry = files.patch_pr_state().read().cases.get(case_id)
    reason = _skip_reason(entry, names, due=due)
    owed = _owed_tail(entry)
    if owed is not None:  # the dead run this one resumes opened the MR: finish its tail only
        kept, dropped = gap_reports.triage(
            reports, min_confidence=th.gap_min_confidence, categories=th.gap_categories_in_scope
        )
        return _finish(cfg, case_id, folder, services, owed, kept, dropped, due=due, notify=notify)
    if reason is not None:
        skipped = FinalizeOutcome(case_id, "skipped", reason, mr_url=entry.mr_url if entry else "")
        if notify and tell_skip:
            _tell(cfg, services, case_id, f"finalize {case_id}: {reason}", skipped)
        return skipped
    kept, dropped = gap_reports.triage(
        reports, min_confidence=th.gap_min_confidence, categories=th.gap_categories_in_scope
    )
    clusters = gap_patterns.pending_clusters()
    outcome = FinalizeOutcome(
        case_id, "pending", "",
        kept=[r.path.name for r in kept],
        dropped=[{"report": d.report.path.name, "reason": d.reason} for d in dropped],
        clusters=[c.id for c in clusters],
    )  # fmt: skip
    if not kept and not clusters:
        detail = f"{len(reports)} gap report(s), {len(dropped)} dropped"
        _record(case_id, "no_gaps", detail=detail, reports=names)
        outcome.status = "no_gaps"
        outcome.message = f"no gap survived the filters ({detail}); nothing to propose"
    else:
        _record(case_id, "pending", detail="patch_suggester running", reports=names)
        _propose(cfg, case, folder, kept, clusters, services, th, outcome, names)
    return _finish(cfg, case_id, folder, services, outcome, kept, dropped, due=due, notify=notify)


def _owed_tail(entry: PatchPrEntry | None) -> FinalizeOutcome | None:
    """A resumed run whose dead run opened and recorded the MR owes what came after it (the
    verdicts, finalize.json, the commit, the DM); before, it answered "already finalized" and
    the operator never heard of the MR."""
    run = journal.current()
    saved = run.recall("proposed") if run is not None and run.resumed else None
    if not isinstance(saved, dict) or entry is None or entry.status != "open":
        return None
    names = set(FinalizeOutcome.__dataclass_fields__)
    return FinalizeOutcome(**{k: v for k, v in saved.items() if k in names})


def _finish(
    cfg: Config,
    case_id: str,
    folder: Path,
    services: Services,
    outcome: FinalizeOutcome,
    kept: list[gap_reports.GapReport],
    dropped: list[gap_reports.Dropped],
    *,
    due: bool,
    notify: bool,
) -> FinalizeOutcome:
    if outcome.status in ("open", "no_gaps"):
        _mark_reports(kept if outcome.status == "open" else [], dropped)
    atomic_write_json(folder / "finalize.json", {"at": clock.now(), **outcome.to_json()})
    try:
        write_retrospective(cfg, case_id, reason="finalized")
    except HarnessError as exc:
        outcome.errors.append(f"retrospective: {exc.line()}")
    try:  # the verdicts in the reports and finalize.json belong to the durable case record
        registry.sync(
            f"case {case_id}: finalized ({outcome.status})", cfg.harness.thresholds, only=[folder]
        )
    except HarnessError as exc:
        outcome.errors.append(f"workspace sync: {exc.line()}")
    event(
        log, "finalize_done", case_id=case_id, status=outcome.status, mr=outcome.mr_url,
        kept=len(kept), dropped=len(dropped), clusters=outcome.clusters,
    )  # fmt: skip
    if notify and (outcome.status != "no_gaps" or not due):
        _tell(cfg, services, case_id, f"finalize {case_id}: {outcome.message}", outcome)
    return outcome


def _propose(
    cfg: Config,
    case: Case,
    folder: Path,
    kept: list[gap_reports.GapReport],
    clusters: list[gap_patterns.ClusterRecord],
    services: Services,
    th: ImprovementThresholds,
    outcome: FinalizeOutcome,
    names: list[str],
) -> None:
    try:
        done = patch_suggester.suggest(
            patch_suggester.PatchJob(
                cfg=cfg,
                th=th,
                case=case,
                case_dir=folder,
                gaps=kept,
                clusters=clusters,
                runtime=services.runtime,
                gitlab=services.gitlab,
                out=services.out,
                measure_eval=services.measure_eval,
            )
        )
    except HarnessError as exc:
        _record(case.id, "failed", detail=exc.line(), reports=names)
        outcome.status = "failed"
        outcome.message = f"the improvement MR failed: {exc.line()}"
        return
    _record(case.id, "open", mr_url=done.web_url, detail=done.branch, reports=names)
    gap_patterns.mark_handed(outcome.clusters, case.id)
    outcome.status, outcome.mr_url = "open", done.web_url
    state = "ready for review" if done.ready else "a draft until its acceptance run passes"
    outcome.message = (
        f"improvement MR {'updated' if done.adopted else 'opened'} against {th.self_repo}: "
        f"{done.web_url} ({state}; {len(kept)} gap(s) kept, {len(outcome.dropped)} dropped"
        + (f", clusters {', '.join(outcome.clusters)}" if outcome.clusters else "")
        + "). Merging it is yours."
    )
    run = journal.current()
    if run is not None:  # the MR is open and recorded: a resumed run owes only the tail
        run.checkpoint("proposed", outcome.to_json())


def _mark_reports(kept: list[gap_reports.GapReport], dropped: list[gap_reports.Dropped]) -> None:
    """The verdict goes into each report's own front matter (gap_analyzer's ``status``)."""
    for report in kept:
        gap_reports.set_status(report, "accepted")
    for item in dropped:
        if item.report.status not in gap_reports.SETTLED:
            gap_reports.set_status(item.report, "false_positive")


def _tell(
    cfg: Config, services: Services, case_id: str, text: str, outcome: FinalizeOutcome
) -> None:
    thread = registry.case_thread(case_id)

    try:
        if thread is not None:
            services.out.post(thread.channel, text, thread_ts=thread.thread_ts, purpose="finalize")
        else:
            services.out.post(cfg.harness.operator.self_dm_channel, text, purpose="finalize")
    except Owed as exc:  # recorded: delivered by a later run
        outcome.owed.append(exc.message)
    except HarnessError as exc:
        outcome.errors.append(f"DM: {exc.line()}")


# -- --due ------------------------------------------------------------------------------------
def last_activity(
    updated_at: str | datetime | None,
    reports: list[gap_reports.GapReport],
    *,
    case_id: str | None = None,
    folder: Path | None = None,
) -> datetime | None:
    """The newest of the case's ``updated_at``, its gap reports' ``created_at`` and — given the
    case — every other activity: followup turns, replies read in its threads, MR events. A
    case the operator chatted on 11 minutes ago is not idle."""
    stamps = [r.created_at for r in reports if r.created_at is not None]
    if isinstance(updated_at, datetime):
        stamps.append(updated_at)
    elif updated_at:
        stamps.append(clock.parse_instant(updated_at, source="case.json updated_at"))
    if case_id is not None:
        stamps += case_activity(case_id, folder or registry.case_dir(case_id))
    return max(stamps) if stamps else None


def case_activity(case_id: str, folder: Path) -> list[datetime]:
    """When the harness last saw the case move outside ``case.json``."""

    found = [t.meta.at for t in transcripts.list_all(folder) if t.meta.at is not None]
    for handle in (files.oncall_thread_map(), files.task_thread_map()):
        for thread in handle.read().for_case(case_id):
            for ts in (thread.last_seen_ts, thread.thread_ts):
                try:
                    found.append(datetime.fromtimestamp(float(ts), UTC))
                except ValueError:
                    continue
    for entry in files.monitored_mrs().read().mrs.values():
        if entry.case_id == case_id and entry.seen_updated_at:
            try:
                found.append(clock.parse_instant(entry.seen_updated_at, source="MR updated_at"))
            except HarnessError:
                continue
    return found


def finalize_due(
    cfg: Config,
    services: Services,
    th: ImprovementThresholds,
    *,
    notify: bool = True,
    enter: Callable[[str], Any] | None = None,
) -> list[FinalizeOutcome]:
    """Every case with gap reports idle for ``finalize_idle_hours`` or more, finalized once.
    ``enter(case_id)``: the context each finalized case runs in — the command passes the shared
    workflow entry (its work session: a case another session holds is ``denied``, naming it)."""

    opened = enter or (lambda case_id: workflow_lock("finalize", case_id))
    idle = timedelta(hours=cfg.harness.thresholds.finalize_idle_hours)
    now = clock.now()
    state = files.patch_pr_state().read()
    outcomes: list[FinalizeOutcome] = []
    for summary in registry.list_cases():
        case_id = str(summary["id"])
        folder = registry.case_dir(case_id)
        if not gap_reports.has_reports(folder):
            continue
        entry = state.cases.get(case_id)
        if entry is not None and (entry.status in WITH_MR or entry.status == "failed"):
            continue  # settled; not even worth a line in the report
        reports = gap_reports.read_case_reports(folder, case_id)
        if _skip_reason(entry, [r.path.name for r in reports], due=True) is not None:
            continue
        last = last_activity(summary.get("updated_at"), reports, case_id=case_id, folder=folder)
        if last is not None and now - last < idle:
            waited = _hours(now - last)
            outcomes.append(FinalizeOutcome(case_id, "not_due", f"idle {waited} of {_hours(idle)}"))
            continue
        try:
            with opened(case_id):
                outcomes.append(finalize_case(cfg, case_id, services, th, due=True, notify=notify))
        except LockHeld:
            outcomes.append(FinalizeOutcome(case_id, "locked", "another finalize runs on it"))
        except PolicyRefused as exc:  # held by another session: the next sweep tries again
            outcomes.append(FinalizeOutcome(case_id, "denied", exc.message))
        except AwaitingApproval as exc:
            outcomes.append(FinalizeOutcome(case_id, "waiting", exc.message))
        except HarnessError as exc:  # one broken case never stops the others
            outcomes.append(FinalizeOutcome(case_id, "failed", exc.line()))
    return outcomes


def _hours(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    return f"{minutes // 60}h{minutes % 60:02d}m"
