"""How a parsed JQL clause decides whether an issue matches (``jira_jql`` parses)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from harness_cli.sandbox.jira_state import Issue, parse_time

__all__ = ["PRIORITIES", "Ctx", "JqlError", "Pred", "all_of", "any_of", "compare", "negate"]

PRIORITIES = ["Highest", "High", "Medium", "Low", "Lowest"]
_TEXT_FIELDS = {"text", "summary", "description", "comment"}
_DATE_FIELDS = {"created", "updated"}
_RELATIVE = re.compile(r"^([-+]?\d+)([wdhm])$")


class JqlError(ValueError):
    """A query Jira would answer with 400 and this message."""


@dataclass
class Ctx:
    """What a clause needs besides the issue: now (epoch), the caller, user matching."""

    now: float
    me: str
    user_matches: Callable[[str | None, str], bool]


Pred = Callable[[Issue, Ctx], bool]


def any_of(preds: Sequence[Pred]) -> Pred:
    return preds[0] if len(preds) == 1 else (lambda i, c: any(p(i, c) for p in preds))


def all_of(preds: Sequence[Pred]) -> Pred:
    return preds[0] if len(preds) == 1 else (lambda i, c: all(p(i, c) for p in preds))


def negate(pred: Pred) -> Pred:
    return lambda i, c: not pred(i, c)


def is_empty(name: str) -> Pred:
    return lambda i, c: not _values(i, name)


def _values(issue: Issue, name: str) -> list[str]:
    if name == "labels":
        return list(issue.labels)
    value: Any = getattr(issue, name, None)
    return [] if value in (None, "") else [str(value)]


def compare(name: str, op: str, values: list[str | None]) -> Pred:
    if name in _TEXT_FIELDS:
        if op not in ("~", "!~"):
            raise JqlError(f"The operator '{op}' is not supported by the '{name}' field.")
        terms = re.findall(r"[\w*]+", (values[0] or "").lower())
        found: Pred = lambda i, c: _text_match(_text(i, name, c), terms)  # noqa: E731
        return found if op == "~" else negate(found)
    if name in _DATE_FIELDS:
        if op not in ("=", "!=", ">", ">=", "<", "<="):
            raise JqlError(f"The operator '{op}' is not supported by the '{name}' field.")
        return _date(name, op, values[0])
    if op in ("~", "!~", ">", ">=", "<", "<=") and name != "priority":
        raise JqlError(f"The operator '{op}' is not supported by the '{name}' field.")

    def hit(issue: Issue, ctx: Ctx) -> bool:
        have = _values(issue, name)
        if op in (">", ">=", "<", "<="):  # priority: Highest > … > Lowest
            rank = PRIORITIES.index(have[0]) if have and have[0] in PRIORITIES else 99
            want = PRIORITIES.index(values[0]) if values[0] in PRIORITIES else 99
            return {">": rank < want, ">=": rank <= want, "<": rank > want, "<=": rank >= want}[op]
        found = any(_equal(name, have, v, ctx) for v in values)
        return found if op in ("=", "in") else not found

    return hit


def _equal(name: str, have: list[str], want: str | None, ctx: Ctx) -> bool:
    if want is None:
        return not have
    if name in ("assignee", "reporter"):
        who = ctx.me if want == "\0me" else want
        return bool(have) and ctx.user_matches(have[0], who)
    return any(h.lower() == want.lower() for h in have)


def _text(issue: Issue, name: str, ctx: Ctx) -> str:
    if name == "text":
        return issue.text(ctx.now)
    if name == "comment":
        return "\n".join(c.body for c in issue.comments if c.visible_at <= ctx.now)
    return str(getattr(issue, name))


def _text_match(text: str, terms: list[str]) -> bool:
    """Jira's text search matches words (case-insensitive), ``term*`` as a prefix."""
    words = set(re.findall(r"\w+", text.lower()))
    for term in terms:
        if term.endswith("*"):
            if not any(w.startswith(term[:-1]) for w in words):
                return False
        elif term not in words:
            return False
    return True


def _date(name: str, op: str, raw: str | None) -> Pred:
    if raw is None:
        raise JqlError(f"The field '{name}' needs a date.")

    def hit(issue: Issue, ctx: Ctx) -> bool:
        value: datetime = getattr(issue, name)
        bound = _when(raw, ctx.now)
        return {
            "=": value == bound,
            "!=": value != bound,
            ">": value > bound,
            ">=": value >= bound,
            "<": value < bound,
            "<=": value <= bound,
        }[op]

    _when(raw, 0.0)  # refuse a bad date at parse time, as Jira does
    return hit


def _when(raw: str, now: float) -> datetime:
    match = _RELATIVE.match(raw.strip())
    if match:
        unit = {"w": "weeks", "d": "days", "h": "hours", "m": "minutes"}[match.group(2)]
        base = datetime.fromtimestamp(now).astimezone()
        return base + timedelta(**{unit: int(match.group(1))})
    try:
        text = raw.strip().replace("/", "-")
        return parse_time(text.replace(" ", "T", 1) if len(text) > 10 else text)
    except ValueError:
        raise JqlError(
            f"Date value '{raw}' for field 'created' is invalid. Valid formats "
            "include: 'yyyy/MM/dd HH:mm', 'yyyy-MM-dd HH:mm', 'yyyy/MM/dd', "
            "'yyyy-MM-dd', or a period format e.g. '-5d', '4w 2d'."
        ) from None
