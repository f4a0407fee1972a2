"""THE table of gate codes: every code the gates can emit, its family, the rule it enforces
(quoted from the reference where the reference states it, defined here where it only names
the code), what it does, and whether it counts toward the reference's 19.

How the 19 come out. The reference: “The framework totals 19 functions”, with “four”
G-gates, “three” N-gates, “seven” A-gates and two spot-checks (EQ1, P7), which is 16, while
its diagram names N1-N3 and N5 and its review section adds the red team (G5) and the
adversarial verdict over D1-D15. So: G1-G4 (4) + N1, N2, N3, N5 (4) + A1-A7 (7) + EQ1, P7 (2)
+ G5 (1) + D, the adversarial verdict (1) = 19. ``REPORT`` (no parseable block) is a guard
note of CONTRACT §4, not one of the 19; neither are the force-continue rules (``rules.py``).

Effects: every violation becomes a guard note at the head of the next prompt; ``clamp`` also
lowers the ceiling, ``block_exit`` also keeps the loop from leaving (G4 and A5 through their
force rules, at most 3 times each), ``pin`` (A7) is applied to every prompt and never fires.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness_cli.loop.verdict import Effect

Family = Literal["G", "N", "A", "spot-check", "review", "report"]


@dataclass(frozen=True)
class GateSpec:
    code: str
    family: Family
    rule: str
    """The rule: a quote (“…”) from the reference, or the harness's definition."""
    fires: str
    """Exactly when the function reports a violation."""
    effect: Effect
    counted: bool = True
    """Counts toward the reference's 19 functions."""


TABLE: tuple[GateSpec, ...] = (
    GateSpec(
        "G1", "G",
        "“fires when open_questions grew during the round yet confidence went up, because a "
        "growing denominator cancels any upward move”",
        "more open questions than the previous report while the harness's own number (the "
        "claim after A1 and EQ1) would rise above its value before the round; the ceiling "
        "holds it at that value (a review's lowered number included)",
        "clamp",
    ),
    GateSpec(
        "G2", "G",
        "“checks that tension language in the prose registers as a contradiction”",
        "the prose around the block or the draft response says however / but / contradicts / "
        "inconsistent / although / on the other hand / despite … while the contradiction "
        "register is empty",
        "guard_note",
    ),
    GateSpec(
        "G3", "G",
        "“neighboring problems are tracked as valid status objects instead of placeholder "
        "strings”",
        "an adjacent problem that is a plain string or lacks summary or status, or an "
        "unchecked source that is a plain string or lacks a name",
        "guard_note",
    ),
    GateSpec(
        "G4", "G",
        "“status=BLOCKED while reachable technical sources were skipped or declared "
        "unavailable by inference and not because of a real error” (G_BLOCKER_FORCE)",
        "BLOCKED before any tool call of the run; or with an unchecked source no tool call "
        "to which failed in this run, whatever its access_status says (checked by hand, "
        "without the run's calls: one whose access_status records no real error or hedges); "
        "or with no blocker recorded at all",
        "block_exit",
    ),
    GateSpec(
        "G5", "review",
        "red team: “flags wherever the investigation's findings part ways with what an "
        "outsider would have guessed … both must pass before a case is marked COMPLETE”",
        "the review's red_team.diverges is true",
        "block_exit",
    ),
    GateSpec(
        "N1", "N",
        "“requires every executable fix action to be paired with a verify_action … A fix "
        "proposed without a way to verify it counts as unfinished work”",
        "an action with no verify_action",
        "block_exit",
    ),
    GateSpec(
        "N2", "N",
        "harness: the root cause is a fully formed artifact, not a stub (“N-gates check "
        "structural completeness, making sure artifacts are fully formed and not stubs”)",
        "a root cause with no evidence items, or COMPLETE without a root cause summary",
        "block_exit",
    ),
    GateSpec(
        "N3", "N",
        "harness: COMPLETE carries the user-facing message (“All outbound communication "
        "passes through the draft_response field”)",
        "COMPLETE with an empty or placeholder draft_response",
        "block_exit",
    ),
    GateSpec(
        "N5", "N",
        "“a verify_action that gives a description, an expected outcome and timing”",
        "a verify_action missing its description, expected_outcome or timing",
        "block_exit",
    ),
    GateSpec(
        "A1", "A",
        "“a hard confidence cap as 1.0, minus 0.08 per open question, minus 0.05 per "
        "unchecked source, and whatever Claude writes, the gate clamps the number "
        "arithmetically”",
        "claimed confidence above the cap",
        "clamp",
    ),
    GateSpec(
        "A2", "A",
        "“block COMPLETE while adjacent problems stay open”",
        "COMPLETE with an adjacent problem whose status is not closed (resolved, ruled out, "
        "out of scope, tracked …) or that has no status",
        "block_exit",
    ),
    GateSpec(
        "A3", "A",
        "“demand a non-empty assumption register”",
        "the assumption register is empty",
        "block_exit",
    ),
    GateSpec(
        "A4", "A",
        "“insist that at least one proposed action maps straight to the root cause”",
        "COMPLETE, or any actions proposed, and no action has maps_to_root_cause",
        "block_exit",
    ),
    GateSpec(
        "A5", "A",
        "“status=COMPLETE and confidence is at least 70, but causal_chain_complete isn't "
        "true. That's a symptom-level finding with no traced root cause” (CAUSAL_CHAIN_FORCE)",
        "COMPLETE with causal_chain_complete not true",
        "block_exit",
    ),
    GateSpec(
        "A6", "A",
        "harness: a destructive action must be aimed at the root cause (“Production database "
        "writes wait for explicit operator confirmation”; destructive actions never auto-run)",
        "a destructive action without maps_to_root_cause",
        "block_exit",
    ),
    GateSpec(
        "A7", "A",
        "“reattaches the unresolved contradictions and unverified assumptions from the "
        "current report, word for word, to the bottom of the next prompt”",
        "never: ``pinned_block(report)`` runs at the end of every prompt builder",
        "pin",
    ),
    GateSpec(
        "EQ1", "spot-check",
        "“makes root-cause nodes cite hard evidence (anything other than INFERRED) or accept "
        "a 60% cap”",
        "no HARD evidence with a claim and a source under the root cause (or no root cause) "
        "and claimed confidence above the cap; also, as a note, any evidence discounted (an "
        "unknown kind read as INFERRED, a HARD item without claim or source)",
        "clamp",
    ),
    GateSpec(
        "P7", "spot-check",
        "“lowers the ceiling by 7% for every adversarial dimension marked FAIL, down to a "
        "floor of 40%”",
        "a review with at least one FAIL dimension; P7 never raises a ceiling already under "
        "the floor",
        "clamp",
    ),
    GateSpec(
        "D", "review",
        "adversarial verdict over D1-D15: “Critical issues go back to the investigator … only "
        "minor issues on a first pass, the loop goes round one more time … Two consecutive "
        "minor-only passes, or one clean pass, end the loop with complete”",
        "review severity critical, or minor (blocks only until the second consecutive minor "
        "pass); a stated \"none\" with FAIL dimensions counts as minor. Carries the "
        "reviewer's notes, in full, into the next prompt",
        "block_exit",
    ),
    GateSpec(
        "REPORT", "report",
        "CONTRACT §4: “a missing or malformed block is itself a guard note, not a crash”",
        "no valid completion report in the output, or a malformed one after the valid one",
        "guard_note",
        counted=False,
    ),
)  # fmt: skip

GATES: dict[str, GateSpec] = {spec.code: spec for spec in TABLE}
