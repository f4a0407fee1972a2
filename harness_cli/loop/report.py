"""The completion report every investigation iteration ends with (CONTRACT §4), and the
extractor that digs it out of the surrounding prose.

The model writes this block, so the model is lenient where the meaning is clear (``0.78`` is
78 %, a lone string is a one-item list, a plain-string action is an action without a
verify_action) and leaves structural sloppiness for the gates to name (a plain-string adjacent
problem is a G3 violation, not a parse error). It is strict only where a gate could not run
without guessing: ``status`` and ``confidence`` must be present and meaningful, evidence kinds
are HARD or INFERRED. A missing or malformed block is reported as a problem, never raised past
``extract_report``: the loop turns it into a guard note and another iteration.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

Status = Literal["IN_PROGRESS", "BLOCKED", "COMPLETE"]

# An adjacent problem in one of these states no longer holds COMPLETE back (A2); any other
# status, including one the model made up, counts as open: the conservative reading.
CLOSED_STATUSES = frozenset(
    {"resolved", "closed", "fixed", "done", "ruled_out", "out_of_scope", "not_related",
     "unrelated", "wont_fix", "deferred", "tracked", "ticketed"}
)  # fmt: skip


class _Lenient(BaseModel):
    # Written by a model, not a person: unknown keys are ignored rather than fatal.
    model_config = ConfigDict(extra="ignore")


class UncheckedSource(_Lenient):
    name: str = ""
    access_status: str = ""
    """Why it was not checked: a real error ("403 Forbidden") or an inference ("probably
    restricted"). G4 tells the two apart."""


class AdjacentProblem(_Lenient):
    summary: str = ""
    status: str = ""
    """``open``, ``blocked``, ``resolved``, ``out_of_scope`` …; see ``CLOSED_STATUSES``."""
    blocker: str = ""
    """What a human must clear, if anything; a recorded blocker justifies a BLOCKED exit."""

    @property
    def is_open(self) -> bool:
        key = re.sub(r"[\s-]+", "_", self.status.strip().lower())
        return key not in CLOSED_STATUSES


class Evidence(_Lenient):
    claim: str = ""
    kind: Literal["HARD", "INFERRED"] = "INFERRED"
    """Unmarked evidence counts as INFERRED: hard evidence has to say so (EQ1). A kind that
    is neither (``"STRONG"``, ``"hard-ish"``) is read as INFERRED, the conservative reading,
    rather than rejecting the whole report; ``stated_kind`` keeps what was written."""
    stated_kind: str = ""
    """The kind as the model wrote it, when it was not HARD or INFERRED (EQ1 names it)."""
    source: str = ""

    @model_validator(mode="before")
    @classmethod
    def _kind(cls, value: Any) -> Any:
        if not isinstance(value, dict) or "kind" not in value:
            return value
        raw = value["kind"]
        kind = raw.strip().upper() if isinstance(raw, str) else raw
        if kind in ("HARD", "INFERRED"):
            return {**value, "kind": kind}
        return {**value, "kind": "INFERRED", "stated_kind": str(raw)}

    @property
    def is_hard(self) -> bool:
        """HARD with something behind it: a claim and where it comes from. An empty
        ``{"kind": "HARD"}`` cites nothing and lifts no cap."""
        return self.kind == "HARD" and bool(self.claim.strip()) and bool(self.source.strip())


class RootCause(_Lenient):
    summary: str = ""
    evidence: list[Evidence] = Field(default_factory=list)

    @field_validator("evidence", mode="before")
    @classmethod
    def _evidence(cls, value: Any) -> Any:
        items = _as_list(value)
        return [{"claim": v} if isinstance(v, str) else v for v in items]


class VerifyAction(_Lenient):
    description: str = ""
    expected_outcome: str = ""
    timing: str = ""
    """When to check, e.g. "5 min after deploy"."""


class Action(_Lenient):
    description: str = ""
    destructive: bool = False
    kind: str = ""
    """What the harness can run itself (#30): ``jira_comment`` (``body``), ``jira_transition``
    (``to``: the status), ``jira_assign`` (``assignee``); ``db_write`` is a production write.
    Empty: prose only, the operator's to carry out."""
    issue: str = ""
    """The Jira key the action is on; empty: the case's own."""
    body: str = ""
    to: str = ""
    assignee: str = ""
    maps_to_root_cause: bool = False
    verify_action: VerifyAction | None = None

    @field_validator("verify_action", mode="before")
    @classmethod
    def _verify(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"description": value} if value.strip() else None
        return value


class CompletionReport(_Lenient):
    """The parsed block. Field names are the reference's and CONTRACT §4's."""

    status: Status
    confidence: int = Field(ge=0, le=100)
    """0-100; a 0-1 float (``0.78``) or a ``"78%"`` string is normalised."""
    open_questions: list[str] = Field(default_factory=list)
    unchecked_sources: list[UncheckedSource | str] = Field(default_factory=list)
    """Plain strings are kept as written so G3 can name them."""
    contradiction_register: list[str] = Field(default_factory=list)
    assumption_register: list[str] = Field(default_factory=list)
    adjacent_problems: list[AdjacentProblem | str] = Field(default_factory=list)
    """Plain strings are placeholders, not status objects: G3."""
    draft_response: str = ""
    """The user-facing Slack message; the only way anything reaches Slack."""
    causal_chain_complete: bool = False
    root_cause: RootCause | None = None
    actions: list[Action] = Field(default_factory=list)
    new_facts: list[str] = Field(default_factory=list)
    """Facts the model says it learned this round. Informative only: ``stalled`` counts what
    the harness finds new in the report and the tool results (``evidence.py``)."""

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, value: Any) -> Any:
        if isinstance(value, str):
            return re.sub(r"[\s-]+", "_", value.strip()).upper()
        return value

    @field_validator("confidence", mode="before")
    @classmethod
    def _confidence(cls, value: Any) -> Any:
        return normalise_confidence(value)

    @field_validator(
        "open_questions", "contradiction_register", "assumption_register", "new_facts",
        mode="before",
    )  # fmt: skip
    @classmethod
    def _strings(cls, value: Any) -> Any:
        return [_text(v) for v in _as_list(value) if _text(v).strip()]

    @field_validator("unchecked_sources", "adjacent_problems", mode="before")
    @classmethod
    def _objects(cls, value: Any) -> Any:
        return [v if isinstance(v, (dict, str)) else _text(v) for v in _as_list(value)]

    @field_validator("root_cause", mode="before")
    @classmethod
    def _root_cause(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"summary": value} if value.strip() else None
        return value

    @field_validator("actions", mode="before")
    @classmethod
    def _actions(cls, value: Any) -> Any:
        return [{"description": v} if isinstance(v, str) else v for v in _as_list(value)]

    @field_validator("draft_response", mode="before")
    @classmethod
    def _draft(cls, value: Any) -> Any:
        return "" if value is None else value


def normalise_confidence(value: Any) -> int:
    """78, 78.4, "78", "78%" → 78; 0.78, "0.78" → 78 (a fraction); 1 stays 1 %, 1.0 is 100 %."""
    if isinstance(value, bool):
        raise ValueError("confidence must be a number, not true/false")
    fraction_ok = isinstance(value, float)
    if isinstance(value, str):
        text = value.strip()
        percent = text.endswith("%")
        text = text.rstrip("%").strip()
        try:
            value = float(text) if "." in text else int(text)
        except ValueError:
            raise ValueError(f"confidence must be a number 0-100 (or 0-1), got {text!r}") from None
        fraction_ok = isinstance(value, float) and not percent
    if not isinstance(value, (int, float)):
        raise ValueError(f"confidence must be a number 0-100, got {type(value).__name__}")
    if fraction_ok and 0.0 <= value <= 1.0:
        value = value * 100
    number = int(value + 0.5) if value >= 0 else int(value)
    if not 0 <= number <= 100:
        raise ValueError(f"confidence must be within 0-100, got {value}")
    return number


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _text(value: Any) -> str:
    # Registers are pinned word for word (A7), so an object entry is kept as its JSON text.
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


# --- extraction ------------------------------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[^\n]*\n(.*?)```", re.DOTALL)
_REQUIRED = ("status", "confidence")


@dataclass(frozen=True)
class Extraction:
    """What ``extract_report`` found. ``problems`` are one-line guard notes; they are empty
    only when a single valid block was found and nothing after it was malformed."""

    report: CompletionReport | None
    prose: str
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Block:
    start: int
    end: int
    data: dict[str, Any] | None
    error: str | None


def parse_report(data: Any) -> CompletionReport:
    """Validate one decoded block; raises ``ValueError`` with a one-line reason."""
    if isinstance(data, dict) and isinstance(data.get("completion_report"), dict):
        data = data["completion_report"]
    if not isinstance(data, dict):
        raise ValueError(f"the completion report must be a JSON object, got {type(data).__name__}")
    try:
        return CompletionReport.model_validate(data)
    except ValidationError as exc:
        raise ValueError(_one_line(exc)) from None


def extract_report(text: str) -> Extraction:
    """The completion report in ``text``: fenced ```json blocks and bare top-level objects
    alike. A block is a JSON object with both ``status`` and ``confidence`` (or wrapping one
    under ``completion_report``); the last valid block wins, and a malformed or invalid block
    after it is named in ``problems`` rather than silently skipped or repaired."""
    blocks = sorted(_fenced_blocks(text) + _bare_blocks(text), key=lambda b: b.start)
    winner: tuple[_Block, CompletionReport] | None = None
    failures: list[tuple[int, str]] = []
    for block in blocks:
        if block.data is None:
            failures.append((block.start, block.error or "malformed JSON"))
            continue
        try:
            winner = (block, parse_report(block.data))
        except ValueError as exc:
            failures.append((block.start, f"invalid completion report: {exc}"))
    if winner is None:
        if failures:
            start, reason = failures[-1]
            problem = f"completion report at line {_line(text, start)} rejected: {reason}"
        else:
            problem = (
                "no completion report found: end the iteration with a ```json block holding "
                "status, confidence and the other fields of the contract"
            )
        return Extraction(None, text, (problem,))
    block, report = winner
    later = [
        f"a later completion report at line {_line(text, s)} was ignored: {reason}"
        for s, reason in failures
        if s > block.start
    ]
    return Extraction(report, text[: block.start] + text[block.end :], tuple(later))


def _fenced_blocks(text: str) -> list[_Block]:
    blocks = []
    for match in _FENCE.finditer(text):
        lang, raw = match.group(1).lower(), match.group(2)
        body = raw.strip()
        if lang not in ("", "json", "jsonc", "json5") or not body.startswith("{"):
            continue
        try:
            data = json.loads(body)
        except json.JSONDecodeError as exc:
            if _looks_like_report(body):
                base = match.start(2) + len(raw) - len(raw.lstrip())
                error = _json_error(exc, text, base + exc.pos)
                blocks.append(_Block(match.start(), match.end(), None, error))
            continue
        if _is_candidate(data):
            blocks.append(_Block(match.start(), match.end(), data, None))
    return blocks


def _bare_blocks(text: str) -> list[_Block]:
    # Fenced regions are blanked (same length, so offsets hold) before scanning the prose.
    # Only top-level objects count: whatever is nested in an object, valid or broken, is
    # skipped with it (a hypothesis slate's {"status", "confidence"} items are not reports).
    masked = _FENCE.sub(lambda m: " " * (m.end() - m.start()), text)
    decoder = json.JSONDecoder()
    blocks: list[_Block] = []
    pos = masked.find("{")
    while pos != -1:
        try:
            data, end = decoder.raw_decode(masked, pos)
        except json.JSONDecodeError as exc:
            broken_end = _broken_end(masked, pos)
            if broken_end is None or not _looks_like_report(masked[pos:broken_end]):
                pos = masked.find("{", pos + 1)
                continue
            blocks.append(_Block(pos, broken_end, None, _json_error(exc, text, exc.pos)))
            end = broken_end
        else:
            if _is_candidate(data):
                blocks.append(_Block(pos, end, data, None))
        pos = masked.find("{", end)
    return blocks


def _broken_end(text: str, start: int) -> int | None:
    """Where a broken object most likely ends: its own line, if that line ends with a brace;
    else, for an object opening its line, the first later line holding only "}" at the same
    indentation. None when neither holds (then nothing is skipped)."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    line_end = len(text) if line_end == -1 else line_end
    if text[start:line_end].rstrip().endswith("}"):
        return line_end
    if text[line_start:start].strip():
        return None
    close = re.compile(r"\n" + " " * (start - line_start) + r"\}[ \t]*(?=\n|$)")
    match = close.search(text, line_end)
    return match.end() if match else None


def _is_candidate(data: Any) -> bool:
    if isinstance(data, dict) and isinstance(data.get("completion_report"), dict):
        data = data["completion_report"]
    return isinstance(data, dict) and all(key in data for key in _REQUIRED)


def _looks_like_report(snippet: str) -> bool:
    return all(f'"{key}"' in snippet for key in _REQUIRED)


def _json_error(exc: json.JSONDecodeError, text: str, offset: int) -> str:
    column = offset - text.rfind("\n", 0, offset)
    return f"malformed JSON: {exc.msg} at line {_line(text, offset)}, column {column}"


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _one_line(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:3]:
        where = ".".join(str(p) for p in error["loc"]) or "report"
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    more = len(exc.errors()) - 3
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
