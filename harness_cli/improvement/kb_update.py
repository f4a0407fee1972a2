"""knowledge-updater (``harness kb-update``, weekly): failure-mode tallies → SOP suggestions.

Reference (Loop 2): "Every week a cron job named knowledge-updater tallies the last ten cases
and, when a mode crosses a threshold, drafts an SOP suggestion: 3 of 10 yields a suggestion and
6 of 10 yields an alert … Humans review and apply them, and nothing is auto-applied here by
design." And: "Projects keep separate SOPs, so Team A's mistakes shape only Team A's rules and
never contaminate Team B."

So, per project, from that project's cases only (``list_cases(project=…)``):
- the window is its ``kb_window`` newest *ended* cases (merged or closed, or with a
  retrospective); an ended case without ``retrospective.json`` gets one first;
- each failure mode is counted once per case it occurred in;
- ``>= kb_suggest_at`` → a concrete suggestion in ``<sops>/<project>/SOP-suggestions.md`` (a
  file for review, next to the project's SOP, which is never touched);
- ``>= kb_alert_at`` → one DM to the operator, once per crossing (``kb-update-state.json``).

The file has no timestamp: the same tallies write the same bytes, so a re-run changes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from harness_cli import clock, paths
from harness_cli.config import Config
from harness_cli.errors import HarnessError
from harness_cli.improvement import failure_modes as fm
from harness_cli.improvement.retrospective import (
    Retrospective,
    build_retrospective,
    read_retrospective,
    write_retrospective,
)
from harness_cli.improvement.thresholds import ImprovementThresholds
from harness_cli.logs import event
from harness_cli.loop.prompts import sops_dir
from harness_cli.outbox.outbound import Outbound
from harness_cli.state.store import JsonFile, atomic_write_text
from harness_cli.workspace import registry

log = logging.getLogger("harness.improvement.kb_update")

SUGGESTIONS_FILE = "SOP-suggestions.md"
ENDED = frozenset({"merged", "closed"})
TYPE_NAMES = {
    "data_gathering": "data-gathering failure",
    "quality_gate": "quality-gate violation",
    "analysis_completeness": "analysis-completeness failure",
}


class Alerted(BaseModel):
    model_config = ConfigDict(extra="allow")
    count: int
    cases: list[str] = Field(default_factory=list)
    at: datetime


class KbState(BaseModel):
    """``$HARNESS_HOME/kb-update-state.json``: the alerts already sent, per project and mode.
    A mode leaves it when it falls under the alert bar, so a later crossing alerts again."""

    model_config = ConfigDict(extra="allow")
    schema_version: int = 1
    projects: dict[str, dict[str, Alerted]] = Field(default_factory=dict)


def state_file() -> JsonFile[KbState]:
    return JsonFile(paths.state_file("kb-update-state.json"), KbState)


@dataclass
class ModeTally:
    id: str
    type: str
    label: str
    cases: list[str]
    rule: str

    @property
    def count(self) -> int:
        return len(self.cases)


@dataclass
class ProjectTally:
    project: str
    window: list[str]
    """The case ids tallied, newest first."""
    modes: list[ModeTally]
    """Every mode seen in the window, most frequent first."""

    def at_least(self, bar: int) -> list[ModeTally]:
        return [m for m in self.modes if m.count >= bar]


@dataclass
class ProjectOutcome:
    project: str
    tally: ProjectTally
    path: Path
    text: str
    written: bool = False
    alerted: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _ended_retrospective(
    cfg: Config, case_id: str, status: str, *, dry_run: bool
) -> Retrospective | None:
    folder = registry.case_dir(case_id)
    found = read_retrospective(folder)
    if found is not None or status not in ENDED:
        return found
    if dry_run:
        return build_retrospective(registry.load_case(case_id), folder)
    write_retrospective(cfg, case_id)
    return read_retrospective(folder)


def tally_project(
    cfg: Config, project: str, th: ImprovementThresholds, *, dry_run: bool = False
) -> ProjectTally:
    """The project's last ``kb_window`` ended cases, tallied per failure mode."""
    window: list[Retrospective] = []
    for summary in registry.list_cases(project=project):  # newest first
        retro = _ended_retrospective(
            cfg, str(summary["id"]), str(summary.get("status")), dry_run=dry_run
        )
        if retro is not None and retro.project == project:
            window.append(retro)
        if len(window) >= th.kb_window:
            break
    modes: dict[str, ModeTally] = {}
    for retro in window:
        for mode in retro.failure_modes:
            spec = fm.spec_for(mode.id, mode.label)
            tally = modes.setdefault(
                mode.id, ModeTally(mode.id, mode.type, mode.label, [], spec.rule)
            )
            if retro.case_id not in tally.cases:
                tally.cases.append(retro.case_id)
    ranked = sorted(modes.values(), key=lambda m: (-m.count, m.id))
    return ProjectTally(project, [r.case_id for r in window], ranked)


def suggestions_path(cfg: Config, project: str) -> Path:
    """``<sops>/<dir of the project's SOP>/SOP-suggestions.md`` — beside the SOP, never in it."""
    sop = Path(cfg.projects.projects[project].sop)
    return sops_dir(cfg) / sop.parent / SUGGESTIONS_FILE


def render(cfg: Config, tally: ProjectTally, th: ImprovementThresholds) -> str:
    sop = cfg.projects.projects[tally.project].sop
    n = len(tally.window)
    lines = [
        f"# SOP suggestions — {tally.project}",
        "",
        f"Drafted by `harness kb-update` from this project's last {n} ended cases"
        + (f" ({', '.join(tally.window)})." if tally.window else "."),
        f"Nothing here is applied: a human reviews each suggestion and edits {sop} by hand.",
        f"A failure mode in {th.kb_suggest_at} of the last {th.kb_window} cases yields a "
        f"suggestion; in {th.kb_alert_at}, an alert to the operator.",
        "",
    ]
    chosen = tally.at_least(th.kb_suggest_at)
    if not chosen:
        lines.append(
            f"No failure mode reached {th.kb_suggest_at} of the last {th.kb_window} cases."
        )
    for number, mode in enumerate(chosen, 1):
        level = "alert" if mode.count >= th.kb_alert_at else "suggestion"
        lines += [
            f"## {number}. {mode.label} — {mode.count} of {n} cases ({level})",
            "",
            fm.suggestion_text(mode.label, mode.rule, mode.count, n),
            "",
            f"- Type: {TYPE_NAMES.get(mode.type, mode.type)}",
            f"- Mode: `{mode.id}`",
            f"- Cases: {', '.join(mode.cases)}",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def kb_update(
    cfg: Config,
    th: ImprovementThresholds,
    out: Outbound | None,
    *,
    projects: list[str] | None = None,
    dry_run: bool = False,
) -> list[ProjectOutcome]:
    """Tally each project (or only ``projects``), write its suggestions file and send new
    alerts. ``dry_run`` writes nothing and sends nothing (not even missing retrospectives)."""
    outcomes: list[ProjectOutcome] = []
    for project in projects or sorted(cfg.projects.projects):
        tally = tally_project(cfg, project, th, dry_run=dry_run)
        path = suggestions_path(cfg, project)
        outcome = ProjectOutcome(project, tally, path, render(cfg, tally, th))
        if not dry_run:
            outcome.written = _write(path, outcome.text, bool(tally.at_least(th.kb_suggest_at)))
            _alert(cfg, th, out, outcome)
        outcomes.append(outcome)
        event(
            log, "kb_update_project", project=project, cases=len(tally.window),
            suggestions=len(tally.at_least(th.kb_suggest_at)),
            alerts=len(tally.at_least(th.kb_alert_at)), dry_run=dry_run,
        )  # fmt: skip
    return outcomes


def _write(path: Path, text: str, has_suggestions: bool) -> bool:
    """Write when the text changed; a project without suggestions gets no new file (an old one
    is rewritten, so stale suggestions do not linger)."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except FileNotFoundError:
        if not has_suggestions:
            return False
    atomic_write_text(path, text)
    return True


def _alert(
    cfg: Config, th: ImprovementThresholds, out: Outbound | None, outcome: ProjectOutcome
) -> None:
    tally = outcome.tally
    loud = {m.id: m for m in tally.at_least(th.kb_alert_at)}
    sent = state_file().read().projects.get(tally.project, {})
    new = [m for mid, m in loud.items() if mid not in sent]
    if new and out is not None:
        n = len(tally.window)
        body = "\n".join(
            f"• {fm.suggestion_text(m.label, m.rule, m.count, n)} Cases: {', '.join(m.cases)}."
            for m in new
        )
        text = (
            f"kb-update {tally.project}: {len(new)} failure mode(s) reached "
            f"{th.kb_alert_at} of the last {th.kb_window} cases.\n{body}\n"
            f"Drafted for review in {outcome.path}; nothing was applied to the SOP."
        )
        try:
            out.post(cfg.harness.operator.self_dm_channel, text)
        except HarnessError as exc:
            outcome.errors.append(f"alert DM for {tally.project}: {exc.line()}")
            new = []
    with state_file().update() as state:
        mine = state.projects.setdefault(tally.project, {})
        for mode_id in [k for k in mine if k not in loud]:
            del mine[mode_id]  # fell under the bar: the next crossing alerts again
        for mode in new if out is not None else []:
            mine[mode.id] = Alerted(count=mode.count, cases=mode.cases, at=clock.now())
    outcome.alerted = [m.id for m in new] if out is not None else []
