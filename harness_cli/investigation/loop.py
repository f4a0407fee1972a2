"""oncall_run: the gated investigation loop, from the pre-commitment lock to a named exit.

Each iteration: prompt (guard notes first, A7 pinned context last) → model → completion report
→ gates → decision. A ``review`` decision runs the adversarial and red-team reviews and
re-evaluates with their verdict. Every iteration is saved as ``iterations/NN.json`` before the
next begins. The model proposes; this module decides (ARCHITECTURE.md, principle 3).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_cli.config import Config
from harness_cli.investigation import precommit
from harness_cli.investigation.anchor import empirical_anchor
from harness_cli.investigation.gates import evaluate, evaluate_text
from harness_cli.investigation.gates.a_gates import pinned_block
from harness_cli.investigation.gates.notes import pending_guard_notes, render_guard_notes
from harness_cli.investigation.prompts import generic_sop, project_text, render
from harness_cli.investigation.report import CompletionReport
from harness_cli.investigation.reviewer import review
from harness_cli.investigation.rules import iterations
from harness_cli.investigation.runs import CaseRunner
from harness_cli.investigation.verdict import Decision, Verdict
from harness_cli.logs import event
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


@dataclass
class Loop:
    cfg: Config
    case: Case
    case_dir: Path
    runner: CaseRunner
    ticket: str
    started: float = field(default_factory=time.monotonic)

    def render(self, name: str, **values: str) -> str:
        return render(self.cfg, name, **values)

    def run(self) -> LoopResult:
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
        history: list[Verdict] = []
        report: CompletionReport | None = None
        prose = ""
        while True:
            n = iterations(history) + 1
            prompt = self.render(
                "investigator",
                guard_notes=render_guard_notes(notes),
                case_id=self.case.id,
                iteration=str(n),
                max_iterations=str(t.max_iterations),
                anchor=empirical_anchor() if n == 1 else "",
                pinned=pinned_block(report),
            )
            text = self.runner("investigator", prompt, context=context)
            found, verdict = evaluate_text(
                text, report, None, t, history=history, elapsed_seconds=self._elapsed()
            )
            if found is not None:
                report, prose = found, text
            history.append(verdict)
            self._save_iteration(n, prompt, text, verdict)
            decision = verdict.decision
            assert decision is not None
            if decision.action == "review" and report is not None:
                outcome = review(
                    self.runner,
                    render=self.render,
                    ticket=self.ticket,
                    slate=_slate_text(slate),
                    analysis=prose,
                    report=report,
                )
                verdict = evaluate(
                    report,
                    None,
                    outcome.verdict,
                    t,
                    history=history,
                    elapsed_seconds=self._elapsed(),
                )
                history.append(verdict)
                self._save_review(n, outcome.raw, verdict)
                decision = verdict.decision
                assert decision is not None
                notes = [*pending_guard_notes(verdict), *outcome.verdict.notes]
            else:
                notes = pending_guard_notes(verdict)
            event(
                log,
                "iteration",
                case_id=self.case.id,
                iteration=n,
                confidence=verdict.confidence,
                decision=decision.action,
            )
            if decision.is_exit:
                return LoopResult(
                    decision, history, report, prose, iterations(history), self._elapsed()
                )

    def _slate(self) -> tuple[precommit.Slate, list[str]]:
        locked, tampered = precommit.load_locked(self.case_dir)
        if locked is not None:
            return locked, [f"[PRECOMMIT] {tampered}"] if tampered else []
        first = self.render(
            "precommit",
            case_id=self.case.id,
            project=self.case.project,
            ticket=self.ticket,
            min_candidates=str(precommit.MIN_CANDIDATES),
            criteria_range=f"{precommit.CRITERIA[0]}-{precommit.CRITERIA[1]}",
        )
        return precommit.commit(self.case_dir, lambda p: self.runner("precommit", p), first)

    def _elapsed(self) -> float:
        return time.monotonic() - self.started

    def _save_iteration(self, n: int, prompt: str, text: str, verdict: Verdict) -> None:
        atomic_write_json(
            self.case_dir / "iterations" / f"{n:02d}.json",
            {
                "iteration": n,
                "verdict": verdict.to_json(),
                "claimed_confidence": verdict.claimed_confidence,
                "status": verdict.status,
                "reason": verdict.decision.reason if verdict.decision else "",
                "calls": self.runner.drain(),
                "prompt_chars": len(prompt),
                "output": text,
            },
        )

    def _save_review(self, n: int, raw: dict[str, Any], verdict: Verdict) -> None:
        atomic_write_json(
            self.case_dir / "review" / f"{n:02d}.json",
            {
                "after_iteration": n,
                "review": raw,
                "verdict": verdict.to_json(),
                "calls": self.runner.drain(),
            },
        )


def _slate_text(slate: precommit.Slate) -> str:
    return json.dumps(slate.model_dump(), indent=2)


def cache_prefix(cfg: Config, project: str) -> tuple[str, ...]:
    """The stable prefix every call of the case shares (prompt caching): SOPs and the KB."""
    return (generic_sop(cfg), project_text(cfg, project, "sop"), project_text(cfg, project, "kb"))
