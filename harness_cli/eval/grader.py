"""The grader of a case: an ``Observed`` run against its case's ``expect`` (``eval.cases``),
every mismatch listed; an empty list is a pass. A delivery case is graded from GitLab's and
Slack's side (``eval.delivery_grader``), an investigation case here."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from harness_cli.eval.cases import LibraryCase, Observed
from harness_cli.eval.delivery_grader import delivery_problems


def check(case: LibraryCase, seen: Observed) -> list[str]:
    """Every way ``seen`` differs from ``case.expect``; [] is a pass."""
    if case.kind == "delivery":
        return delivery_problems(case, seen)
    e = case.expect
    bad: list[str] = []

    def want(ok: bool, what: str) -> None:
        if not ok:
            bad.append(what)

    want(not seen.unmatched, f"the model script left requests unmatched: {seen.unmatched[:2]}")
    if e.exit is not None:
        want(seen.exit == e.exit, f"exit {seen.exit!r}, expected {e.exit!r} ({seen.exit_line})")
    want(seen.exit_code == e.exit_code, f"exit code {seen.exit_code}, expected {e.exit_code}")
    if e.iterations is not None:
        want(seen.iterations == e.iterations, f"{seen.iterations} iterations, not {e.iterations}")
    if e.exit_note is not None:
        want(e.exit_note in seen.exit_line, f"exit line {seen.exit_line!r} lacks {e.exit_note!r}")
    if e.status is not None:
        want(seen.status == e.status, f"case status {seen.status!r}, expected {e.status!r}")
    for code in e.guard_notes:
        want(code in seen.prompt_codes,
             f"no {code} guard note in a prompt the model received "
             f"(the prompts had: {sorted(seen.prompt_codes)})")  # fmt: skip
    for code in e.verdict_codes:
        want(code in seen.codes, f"no {code} in the verdicts (seen: {sorted(seen.codes)})")
    for code in e.no_guard_notes:
        want(code not in seen.codes, f"{code} was raised")
    if case.honest:
        _honest(want, seen)
    if e.confidences is not None:
        want(seen.confidences == e.confidences, f"confidences {seen.confidences}")
        _told(want, seen, e.confidences[-1] if e.confidences else None)
    if e.trajectory is not None:
        want(f"Confidence: {e.trajectory}\n" in seen.analysis, f"sparkline is not {e.trajectory}")
    for n, texts in e.prompt_contains.items():
        prompt = seen.prompts[n - 1] if len(seen.prompts) >= n else ""
        for text in texts:
            want(text in prompt, f"iteration {n}'s prompt lacks {text!r}")
    for n, texts in e.prompt_once.items():
        prompt = seen.prompts[n - 1] if len(seen.prompts) >= n else ""
        for text in texts:
            want(prompt.count(text) == 1, f"iteration {n}'s prompt has {text!r} "
                 f"{prompt.count(text)} times")  # fmt: skip
    dm = "\n".join(seen.dm)
    want(len(seen.dm) <= 1, f"{len(seen.dm)} posts to the operator (one expected)")
    want(dm.count("`exit=") <= 1, "the exit line was posted more than once")
    _contains(want, "the DM", dm, e.dm_contains, present=True)
    _contains(want, "the DM", dm, e.dm_lacks, present=False)
    _contains(want, "ANALYSIS.md", seen.analysis, e.analysis_contains, present=True)
    _contains(want, "TASK.md", seen.task, e.task_lacks, present=False)
    _contains(want, "case show", seen.case_show, e.case_show_contains, present=True)
    if e.review is not None:
        want(seen.review_code == e.review.exit_code, f"review exited {seen.review_code}")
        if e.review.decision is not None:
            want(seen.review_decision == e.review.decision,
                 f"review decided {seen.review_decision!r}, not {e.review.decision!r}")  # fmt: skip
    return bad


HONEST_NEVER = ("CONFIDENCE_FORCE", "CAUSAL_CHAIN_FORCE", "G_BLOCKER_FORCE")
"""What an honest model may never get: a forced round."""
_TOLD = re.compile(r"confidence=(\d+)%")


def _honest(want: Any, seen: Observed) -> None:
    """``honest: true``: the harness never forces the model, and the number the operator is
    told is never capped below what the model claimed at the end (a review may lower a round,
    and A1 may lower a round with open questions, but an honest end keeps its claim)."""
    forced = sorted(set(HONEST_NEVER) & (seen.codes | seen.prompt_codes))
    want(not forced, f"an honest model was forced ({', '.join(forced)})")
    told = _TOLD.search(seen.exit_line)
    if told and seen.claimed and seen.exit == "complete":
        want(int(told.group(1)) >= seen.claimed[-1],
             f"an honest model's closing claim of {seen.claimed[-1]}% was capped to "
             f"{told.group(1)}% in the exit line")  # fmt: skip


def _told(want: Any, seen: Observed, last: int | None) -> None:
    """The last confidence as the operator got it: the exit line and the DM carry it."""
    if last is None or not seen.exit_line:
        return
    told = _TOLD.search(seen.exit_line)
    said = told.group(0) if told else "no confidence"
    want(told is not None and int(told.group(1)) == last, f"the exit line says {said}, not {last}%")
    dm = "\n".join(seen.dm)
    if seen.dm:
        want(f"confidence={last}%" in dm, f"the DM does not tell confidence={last}%")


def _contains(want: Any, where: str, text: str, needles: Iterable[str], *, present: bool) -> None:
    for needle in needles:
        if present:
            want(needle in text, f"{where} lacks {needle!r}")
        else:
            want(needle not in text, f"{where} has {needle!r}")
