"""oncall_run: the gated investigation loop, from the pre-commitment lock to a named exit.

Each iteration: prompt (guard notes first, A7 pinned context last) → model → the lock checked
against its record → completion report → gates (with what the harness saw on the wire: the
run's tool calls, the facts of earlier rounds) → decision. A ``review`` decision runs the
adversarial and red-team reviews, each in its own staged folder, and re-evaluates the same
round with their verdict. Every iteration is saved as ``iterations/NN.json`` before the next
begins. A call that cannot reach the model ends the loop as ``exit=failed`` with its cause.
The model proposes; this module decides (ARCHITECTURE.md, principle 3).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_cli import components, paths
from harness_cli.config import Config
from harness_cli.cost import meter
from harness_cli.cost.budgets import BudgetExceeded
from harness_cli.investigation import precommit
from harness_cli.investigation.analysis import investigator_notes
from harness_cli.investigation.anchor import empirical_anchor
from harness_cli.investigation.gates import evaluate, missing_report
from harness_cli.investigation.gates.a_gates import pinned_block
from harness_cli.investigation.reviewer import review
from harness_cli.investigation.rules import iterations, wall_clock_used_up
from harness_cli.investigation.staging import Narrative
from harness_cli.logs import event
from harness_cli.loop.evidence import Evidence, ToolUse, round_facts
from harness_cli.loop.guard_notes import pending_guard_notes, render_guard_notes
from harness_cli.loop.prompts import generic_sop, project_text, render
from harness_cli.loop.report import CompletionReport, Extraction, extract_report
from harness_cli.loop.runs import CaseRunner, ModelUnavailable, WallClockCut
from harness_cli.loop.verdict import Decision, Verdict
from harness_cli.state.store import atomic_write_json
from harness_cli.workspace.case import Case

log = logging.getLogger("harness.investigation")


@dataclass
class LoopResult:
    decision: Decision
    history: list[Verdict]
    report: CompletionReport | None
    prose: str
    iterations: int
    elapsed_seconds: float
    tokens: dict[str, int] = field(default_factory=dict)
    tools: tuple[ToolUse, ...] = ()
    """Every tool call of the run, as the runtime reported it (the blockers' evidence)."""
    catalog: tuple[str, ...] = ()
    """The MCP servers the run could reach (the exit line's and ANALYSIS.md's sources)."""

    @property
    def confidence(self) -> int:
        return self.history[-1].confidence if self.history else 0


@dataclass
class Loop:
    cfg: Config
    case: Case
    case_dir: Path
    runner: CaseRunner
    ticket: str
    committer: precommit.Committer | None = None
    """Commits the lock file into the workspace (None: a dry run commits nothing)."""
    started: float = field(default_factory=time.monotonic)
    history: list[Verdict] = field(default_factory=list)
    report: CompletionReport | None = None
    previous: CompletionReport | None = None
    """The report before ``report`` (G1 and what was answered, for the review's verdict)."""
    prose: str = ""
    outputs: list[tuple[int, str]] = field(default_factory=list)
    run_tools: list[ToolUse] = field(default_factory=list)
    seen: frozenset[str] = frozenset()

    def render(self, name: str, **values: str) -> str:
        return render(self.cfg, name, **values)

    def run(self) -> LoopResult:
        t = self.cfg.harness.investigation
        if self.runner.deadline is None:
            self.runner.deadline = self.started + t.wall_clock_minutes * 60
        try:
            decision = self._run()
        except WallClockCut as exc:
            event(log, "investigation_wall_clock_cut", logging.WARNING, case_id=self.case.id,
                  role=exc.role)  # fmt: skip
            decision = wall_clock_used_up(t, cut=exc.role)
        except BudgetExceeded as exc:  # the safe point: before a call, everything saved
            event(log, "investigation_budget_reached", logging.WARNING, case_id=self.case.id,
                  budget=exc.kind, unit=exc.unit, limit=exc.limit, usd=exc.spent.usd)  # fmt: skip
            decision = Decision(
                "exit_budget", exc.line(), exit_note=exc.note, exit_code=exc.exit_code
            )
        except ModelUnavailable as exc:
            if exc.kind == "outage":  # weather, not a verdict: the case waits (loop.outage)
                raise
            event(log, "investigation_could_not_run", logging.ERROR, case_id=self.case.id,
                  kind=exc.kind, role=exc.role, error=exc.detail[:500])  # fmt: skip
            decision = Decision(
                "exit_failed",
                f"{exc.message} — {exc.hint}" if exc.hint else exc.message,
                exit_note=exc.note,
                exit_code=exc.exit_code,
            )
        return LoopResult(
            decision,
            self.history,
            self.report,
            self.prose,
            iterations(self.history),
            self._elapsed(),
            tools=tuple(self.run_tools),
            catalog=self._catalog(),
        )

    def _run(self) -> Decision:
        t = self.cfg.harness.investigation
        slate, notes = self._slate()
        context = self.render(
            "investigator-context",
            case_id=self.case.id,
            project=self.case.project,
            case_dir=str(self.case_dir),
            ticket=self.ticket,
            slate=_slate_text(slate),
        )
        while True:
            n = iterations(self.history) + 1
            began = time.monotonic()
            prompt = self.render(
                "investigator",
                guard_notes=render_guard_notes(notes),
                case_id=self.case.id,
                iteration=str(n),
                max_iterations=str(t.max_iterations),
                anchor=empirical_anchor()
                if n == 1 and components.enabled("empirical_anchor")
                else "",
                pinned=pinned_block(self.report) if components.enabled("context_pinning") else "",
            )
            with meter.scope(iteration=n):
                text = self.runner("investigator", prompt, context=context)
            tools = self.runner.take_tools()
            self.run_tools += tools
            slate, lock_notes = self._lock(slate)
            found = extract_report(text)
            verdict = self._verdict(found, tools)
            self.outputs.append((n, text))
            self.history.append(verdict)
            self._save_iteration(n, prompt, text, verdict, time.monotonic() - began)
            if verdict.decision is not None and verdict.decision.action == "review":
                assert self.report is not None
                with meter.scope(iteration=n):
                    verdict = self._review(n, slate, found, tools)
            decision = verdict.decision
            assert decision is not None
            notes = [*pending_guard_notes(verdict), *lock_notes]
            event(
                log,
                "iteration",
                case_id=self.case.id,
                iteration=n,
                confidence=verdict.confidence,
                decision=decision.action,
            )
            if decision.is_exit:
                return decision

    def _verdict(self, found: Extraction, tools: list[ToolUse]) -> Verdict:
        t = self.cfg.harness.investigation
        evidence = self._evidence(tools)
        if found.report is None:
            self.seen |= round_facts(None, None, tools)
            return missing_report(found.problems, self.history, t, elapsed_seconds=self._elapsed())
        verdict = evaluate(
            found.report, self.report, None, t,
            prose=found.prose, problems=found.problems, history=self.history,
            elapsed_seconds=self._elapsed(), evidence=evidence,
        )  # fmt: skip
        self.seen |= round_facts(found.report, self.report, tools)
        self.previous, self.report, self.prose = self.report, found.report, found.prose
        return verdict

    def _evidence(self, tools: list[ToolUse]) -> Evidence:
        return Evidence(tuple(self.run_tools), tuple(tools), self.seen, self._catalog())

    def _catalog(self) -> tuple[str, ...]:
        """The sources the investigator could reach: every server of mcp.json."""
        return tuple(self.cfg.mcp.mcpServers)

    def _review(
        self, n: int, slate: precommit.Slate, found: Extraction, tools: list[ToolUse]
    ) -> Verdict:
        """Both reviews of this round's report, then the round judged again with them: the
        same inputs as its own verdict (prose for G2, the previous report for G1, the run's
        tool calls) plus the review, so no guard note of the round is lost."""
        assert self.report is not None
        began = time.monotonic()
        narrative = Narrative(
            slate=_slate_text(slate),
            iterations=tuple(self.outputs),
            notes=investigator_notes(self.case_dir),
        )
        outcome = review(
            self.runner,
            render=self.render,
            ticket=self.ticket,
            narrative=narrative,
            report=self.report,
            case_dir=self.case_dir,
        )
        self.runner.take_tools()  # what the reviewers read is not the investigation's evidence
        verdict = evaluate(
            self.report, self.previous, outcome.verdict, self.cfg.harness.investigation,
            prose=found.prose, problems=found.problems, history=self.history,
            elapsed_seconds=self._elapsed(),
            evidence=Evidence(tuple(self.run_tools), tuple(tools), catalog=self._catalog()),
        )  # fmt: skip
        self.history.append(verdict)
        self._save_review(n, outcome.raw, outcome.staged, verdict, time.monotonic() - began)
        return verdict

    def _slate(self) -> tuple[precommit.Slate, list[str]]:
        if not components.enabled("precommit_lock"):  # an eval ablation: no slate, no lock
            return precommit.Slate(), []
        locked, notes = self._enforce()
        if locked is not None:
            return locked, notes
        first = self.render(
            "precommit",
            case_id=self.case.id,
            project=self.case.project,
            ticket=self.ticket,
            min_candidates=str(precommit.MIN_CANDIDATES),
            criteria_range=f"{precommit.CRITERIA[0]}-{precommit.CRITERIA[1]}",
        )
        with meter.scope(iteration=0):
            slate, notes = precommit.commit(
                self.case_dir,
                lambda p: self.runner("precommit", p),
                first,
                committer=self.committer,
            )
        self.runner.take_tools()
        return slate, notes

    def _lock(self, slate: precommit.Slate) -> tuple[precommit.Slate, list[str]]:
        """After every call: the lock file against its record, put back if it was changed."""
        if not components.enabled("precommit_lock"):
            return slate, []
        locked, notes = self._enforce()
        return (locked or slate), notes

    def _enforce(self) -> tuple[precommit.Slate | None, list[str]]:
        return precommit.enforce(
            self.case_dir, original=precommit.first_committed(paths.workspace())
        )

    def _elapsed(self) -> float:
        return time.monotonic() - self.started

    def _save_iteration(
        self, n: int, prompt: str, text: str, verdict: Verdict, seconds: float
    ) -> None:
        atomic_write_json(
            self.case_dir / "iterations" / f"{n:02d}.json",
            {
                "iteration": n,
                "seconds": round(seconds, 4),
                "verdict": verdict.to_json(),
                "claimed_confidence": verdict.claimed_confidence,
                "status": verdict.status,
                "reason": verdict.decision.reason if verdict.decision else "",
                "new_facts_seen": verdict.new_facts,
                "calls": self.runner.drain(),
                "prompt_chars": len(prompt),
                "output": text,
            },
        )

    def _save_review(
        self,
        n: int,
        raw: dict[str, Any],
        staged: dict[str, dict[str, str]],
        verdict: Verdict,
        seconds: float,
    ) -> None:
        atomic_write_json(
            self.case_dir / "review" / f"{n:02d}.json",
            {
                "after_iteration": n,
                "seconds": round(seconds, 4),
                "review": raw,
                "verdict": verdict.to_json(),
                "reason": verdict.decision.reason if verdict.decision else "",
                "staged": staged,
                "calls": self.runner.drain(),
            },
        )


def _slate_text(slate: precommit.Slate) -> str:
    return json.dumps(slate.model_dump(), indent=2)


def cache_prefix(cfg: Config, project: str) -> tuple[str, ...]:
    """The stable prefix every call of the case shares (prompt caching): SOPs and the KB."""
    return (generic_sop(cfg), project_text(cfg, project, "sop"), project_text(cfg, project, "kb"))
