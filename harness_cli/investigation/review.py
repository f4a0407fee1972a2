"""The adversarial review verdict (REVIEW.json): fifteen dimensions D1-D15, each PASS, FAIL or
NA with a note, an overall severity, and the isolated red team's hypothesis (G5).

The reviewer is a model too, so values are read case-insensitively and ``"D4": "FAIL"`` is
accepted for ``"D4": {"verdict": "FAIL"}``; but every one of the fifteen dimensions must be
answered, since a skipped checklist item is not a pass.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness_cli.loop.verdict import ReviewSummary, Severity

# The reference names the first four ("assumption validity, the evidence chain, causal
# reasoning, alternative hypotheses and more"); the rest complete the checklist the reviewer
# prompt spells out.
DIMENSIONS: dict[str, str] = {
    "D1": "assumption validity",
    "D2": "evidence chain",
    "D3": "causal reasoning",
    "D4": "alternative hypotheses",
    "D5": "fidelity to the pre-committed hypothesis slate",
    "D6": "data-source coverage (reachable sources checked)",
    "D7": "contradictions registered and resolved",
    "D8": "adjacent problems tracked and scoped",
    "D9": "timeline consistency",
    "D10": "reproduction or direct observation of the failure",
    "D11": "actions map to the root cause",
    "D12": "each fix has a verification with outcome and timing",
    "D13": "risk and reversibility of proposed actions",
    "D14": "confidence calibrated to the evidence",
    "D15": "the draft response is accurate and actionable",
}


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class DimensionResult(_Lenient):
    verdict: Literal["PASS", "FAIL", "NA"]
    note: str = ""

    @field_validator("verdict", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip().upper().replace("/", "")
            return "NA" if text in ("N A", "NONE", "") else text
        return value


class RedTeam(_Lenient):
    """G5: shown only the problem statement and the conclusion."""

    hypothesis: str
    """The outsider's independent explanation."""
    diverges: bool
    """True when that hypothesis parts ways with the investigation's conclusion."""
    note: str = ""


class ReviewVerdict(_Lenient):
    dimensions: dict[str, DimensionResult]
    severity: Severity
    """``critical``: back to the investigator; ``minor``: one more round on a first pass;
    ``none``: a clean pass."""
    red_team: RedTeam
    notes: list[str] = Field(default_factory=list)
    """The reviewer's critique, injected as guard notes when the loop goes round again."""

    @field_validator("severity", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("dimensions", mode="before")
    @classmethod
    def _dimensions(cls, value: Any) -> Any:
        if isinstance(value, list):  # [{"id": "D1", "verdict": "PASS"}, ...]
            value = {str(item.get("id", "")): item for item in value if isinstance(item, dict)}
        if not isinstance(value, dict):
            return value
        out = {
            str(key).strip().upper(): ({"verdict": v} if isinstance(v, str) else v)
            for key, v in value.items()
        }
        unknown = sorted(set(out) - set(DIMENSIONS))
        missing = [d for d in DIMENSIONS if d not in out]
        if unknown:
            raise ValueError(f"unknown dimension(s) {', '.join(unknown)}; expected D1-D15")
        if missing:
            raise ValueError(f"dimension(s) {', '.join(missing)} not answered (PASS, FAIL or NA)")
        return out

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(d for d in DIMENSIONS if self.dimensions[d].verdict == "FAIL")

    @property
    def effective_severity(self) -> Severity:
        """The severity the loop acts on: a review that fails a dimension is not a clean pass,
        whatever severity it states ("none" with FAIL dimensions counts as minor)."""
        if self.severity == "none" and self.failed:
            return "minor"
        return self.severity

    def summary(self) -> ReviewSummary:
        return ReviewSummary(self.effective_severity, self.failed, self.red_team.diverges)


def parse_review(text: str) -> ReviewVerdict:
    """REVIEW.json's text → the verdict; ``ValueError`` with a one-line reason otherwise."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"malformed JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None
    try:
        return ReviewVerdict.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "review"
        more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
        raise ValueError(f"{where}: {first['msg'].removeprefix('Value error, ')}{more}") from None
