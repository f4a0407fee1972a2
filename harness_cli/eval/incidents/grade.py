"""Grading one incident run, and summing many: what counts is what reached the wire.

- **Root cause**: a rubric (every group of phrases matched in the final report's root cause
  and draft answer). A judge model only in live mode: ``judge_for(live=True, model=…)`` takes
  any callable that answers ``judge_prompt`` (the live runner supplies it); without one, live
  grading is refused rather than silently falling back to the rubric.
- **Evidence**: every proving call of the incident must be in the world's own record of calls
  (``calls.jsonl``: server, tool, arguments, outcome), with the outcome the incident expects,
  and cited by the final report (a HARD item naming that server; for a source that is down,
  an unchecked source naming it). A HARD item citing a world server that answered no call of
  the run is *unbacked* and fails the case: the model's claim is never the proof.
- **Exit**: the harness's exit name against the incident's right exit.
- **Cost**: the cost meter's $ and tokens of the run (the trial's own cost log).

Calibration: the harness's final confidence (the exit line's) against the root cause being
right. Brier = mean((p − y)²); ECE = Σ_b (n_b / N) · |mean(y in b) − mean(p in b)| over
``BINS`` equal-width bins of p on [0, 1] (bin b holds b/B ≤ p < (b+1)/B; p = 1 is in the last).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from harness_cli.errors import InputError
from harness_cli.eval.calibration import BINS, brier, ece, percentile
from harness_cli.eval.incidents.model import SOURCES, Evidence, Incident
from harness_cli.loop.report import CompletionReport

__all__ = [
    "BINS",
    "CaseResult",
    "EvidenceGrade",
    "Judge",
    "RubricJudge",
    "Summary",
    "brier",
    "ece",
    "grade_evidence",
    "judge_for",
    "judge_prompt",
    "percentile",
    "rubric_missing",
    "summarise",
]


# -- root cause --------------------------------------------------------------------------
def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w.%=/<>-]+", " ", text.lower()).split())


def rubric_missing(rubric: Sequence[Sequence[str]], answer: str) -> list[str]:
    """The groups of ``rubric`` no phrase of which is in ``answer`` ([] = the answer holds)."""
    said = f" {_norm(answer)} "
    return [
        " | ".join(group)
        for group in rubric
        if not any(f" {_norm(p)}" in said or _norm(p) in said for p in group)
    ]


@dataclass(frozen=True)
class JudgeVerdict:
    correct: bool
    why: str
    by: str


class Judge(Protocol):
    def __call__(self, incident: Incident, answer: str) -> JudgeVerdict: ...


class RubricJudge:
    """The scripted grade: every rubric group matched."""

    def __call__(self, incident: Incident, answer: str) -> JudgeVerdict:
        missing = rubric_missing(incident.truth.rubric, answer)
        why = "every rubric group matched" if not missing else f"missing: {'; '.join(missing)}"
        return JudgeVerdict(not missing, why, "rubric")


def judge_prompt(incident: Incident, answer: str) -> str:
    """What a judge model is asked in live mode: the ground truth, the rubric as guidance, the
    answer; one JSON line back (``{"correct": true|false, "why": "…"}``)."""
    rubric = "\n".join(f"- one of: {', '.join(g)}" for g in incident.truth.rubric)
    return (
        "You grade an incident investigation. Is the ANSWER's root cause the TRUE root cause "
        "(the same mechanism, not merely a symptom or a nearby component)?\n\n"
        f"TRUE ROOT CAUSE: {incident.truth.root_cause}\nA correct answer names:\n{rubric}\n"
        f"A WRONG answer would be, e.g.: {incident.distractor.root_cause}\n\n"
        f"ANSWER:\n{answer}\n\nReply with one JSON line: "
        '{"correct": true or false, "why": "one sentence"}'
    )


def judge_for(live: bool, model: Callable[[str], str] | None = None) -> Judge:
    """The rubric for scripted runs; in live mode a judge model (``model``: prompt → reply
    text, e.g. one Messages API call) — live mode without one is refused."""
    if not live:
        return RubricJudge()
    if model is None:
        raise InputError(
            "live incident grading needs a judge model",
            hint="pass judge_for(live=True, model=…) a function that sends judge_prompt",
        )
    return _ModelJudge(model)


class _ModelJudge:
    def __init__(self, model: Callable[[str], str]) -> None:
        self.model = model

    def __call__(self, incident: Incident, answer: str) -> JudgeVerdict:
        reply = self.model(judge_prompt(incident, answer))
        found = re.search(r"\{.*\}", reply, re.DOTALL)
        try:
            data = json.loads(found.group(0)) if found else {}
        except ValueError:
            data = {}
        if not isinstance(data.get("correct"), bool):
            return JudgeVerdict(False, f"the judge's reply did not parse: {reply[:120]!r}", "model")
        return JudgeVerdict(bool(data["correct"]), str(data.get("why", "")), "model")


def answer_text(report: CompletionReport | None) -> str:
    """What the run concluded: the root cause's summary and the answer drafted for the user."""
    if report is None:
        return ""
    cause = report.root_cause.summary if report.root_cause is not None else ""
    return f"{cause}\n{report.draft_response}".strip()


# -- evidence from the wire --------------------------------------------------------------
@dataclass
class EvidenceGrade:
    ok: bool
    missing: list[str] = field(default_factory=list)
    """Proving calls not on the wire, or made but not cited."""
    unbacked: list[str] = field(default_factory=list)
    """HARD items citing a world server that answered no call of the run."""
    cited: list[str] = field(default_factory=list)
    """Proving calls made and cited."""


def _same(want: Any, got: Any) -> bool:
    return str(want).strip().lower() == str(got).strip().lower()


def _named(server: str, text: str) -> bool:
    return bool(re.search(rf"(?<![a-z]){re.escape(server)}(?![a-z])", text.lower())) or (
        f"mcp__{server}__" in text
    )


def _answers(want: Evidence, call: dict[str, Any]) -> bool:
    """The recorded ``call`` is the proving call ``want`` (its arguments a superset)."""
    args = call.get("arguments") or {}
    return (
        call.get("server") == want.server
        and call.get("tool") == want.tool
        and call.get("outcome") == want.outcome
        and all(_same(v, args.get(k)) for k, v in want.args.items())
    )


def grade_evidence(
    incident: Incident, report: CompletionReport | None, calls: Sequence[dict[str, Any]]
) -> EvidenceGrade:
    """The incident's proving calls against the world's record (``calls``) and the report."""
    hard = [
        e for e in (report.root_cause.evidence if report and report.root_cause else []) if e.is_hard
    ]
    unchecked = " ".join(
        u if isinstance(u, str) else f"{u.name} {u.access_status}"
        for u in (report.unchecked_sources if report else [])
    )
    grade = EvidenceGrade(ok=True)
    for want in incident.evidence:
        made = [c for c in calls if _answers(want, c)]
        label = f"{want.mcp_name} {want.args}"
        if not made:
            grade.missing.append(f"{label}: no such call ({want.outcome}) on the wire")
            continue
        if want.outcome == "ok":
            cited = any(_named(want.server, e.source) for e in hard)
        else:
            cited = _named(want.server, unchecked)
        if cited:
            grade.cited.append(label)
        else:
            grade.missing.append(f"{label}: made but not cited")
    answered = {c.get("server") for c in calls if c.get("outcome") == "ok"}
    for e in hard:
        for server in SOURCES:
            if _named(server, e.source) and server not in answered:
                grade.unbacked.append(f"{e.claim[:60]!r} cites {server}, which answered no call")
    grade.ok = not grade.missing and not grade.unbacked
    return grade


# -- one case ----------------------------------------------------------------------------
@dataclass
class CaseResult:
    incident: str
    investigator: str
    exit: str | None
    expected_exit: str
    confidence: float | None
    """The harness's final confidence (the exit line's), 0..1; None: no number was given."""
    root_cause_ok: bool
    root_cause_why: str
    evidence: EvidenceGrade
    usd: float
    tokens: int
    seconds: float
    """Wall time of ``harness investigate`` (the case's latency)."""
    iterations: int = 0
    problems: list[str] = field(default_factory=list)
    """What kept the run from being graded fairly (a script left a request unmatched…)."""

    @property
    def exit_ok(self) -> bool:
        return self.exit == self.expected_exit

    @property
    def passed(self) -> bool:
        return self.root_cause_ok and self.evidence.ok and self.exit_ok and not self.problems

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "exit_ok": self.exit_ok, "passed": self.passed}


@dataclass
class Summary:
    investigator: str
    cases: int
    passed: int
    root_cause: int
    evidence: int
    exit: int
    usd_per_case: float
    tokens_per_case: float
    p50_s: float | None
    p95_s: float | None
    brier: float | None
    ece: float | None
    mean_confidence: float

    @property
    def pass_rate(self) -> float:
        return self.passed / self.cases if self.cases else 0.0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "pass_rate": round(self.pass_rate, 4)}


def summarise(results: Sequence[CaseResult]) -> list[Summary]:
    """One summary per investigator, in the order they first appear. A case without a final
    confidence counts as 0 % in the calibration (the harness gave the operator no number)."""
    order = list(dict.fromkeys(r.investigator for r in results))
    out = []
    for who in order:
        mine = [r for r in results if r.investigator == who]
        n = len(mine)
        pairs = [(r.confidence or 0.0, r.root_cause_ok) for r in mine]
        seconds = [r.seconds for r in mine]
        out.append(
            Summary(
                investigator=who,
                cases=n,
                passed=sum(r.passed for r in mine),
                root_cause=sum(r.root_cause_ok for r in mine),
                evidence=sum(r.evidence.ok for r in mine),
                exit=sum(r.exit_ok for r in mine),
                usd_per_case=sum(r.usd for r in mine) / n,
                tokens_per_case=sum(r.tokens for r in mine) / n,
                p50_s=percentile(seconds, 0.50),
                p95_s=percentile(seconds, 0.95),
                brier=brier(pairs),
                ece=ece(pairs),
                mean_confidence=sum(p for p, _ in pairs) / n,
            )
        )
    return out
