"""The JQL subset the Jira emulator understands, parsed into a predicate and an order.

Clauses ``field op value`` joined by ``AND``/``OR``/``NOT`` and parentheses, then an optional
``ORDER BY field [ASC|DESC], …``. Fields: project, key (issuekey, id), status, assignee,
reporter, labels, issuetype (type), priority, text, summary, description, comment, created,
updated. Operators: ``= != ~ !~ > >= < <=``, ``in (…)``, ``not in (…)``, ``is [not] EMPTY``.
Values: quoted or bare words, ``currentUser()``, ``EMPTY``/``NULL``, dates (``2026-03-01``,
``"2026-03-01 10:00"``) and relative ones (``-2d``, ``-4h``, ``-30m``, ``-1w``). What Jira would
refuse, this refuses with Jira's words (a 400 at the API).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness_cli.sandbox.jira_jql_match import (
    Ctx,
    JqlError,
    Pred,
    all_of,
    any_of,
    compare,
    is_empty,
    negate,
)
from harness_cli.sandbox.jira_state import Issue

__all__ = ["FIELDS", "Ctx", "JqlError", "Query", "parse"]

FIELDS = {
    "project": "project",
    "key": "key",
    "issuekey": "key",
    "id": "key",
    "status": "status",
    "assignee": "assignee",
    "reporter": "reporter",
    "labels": "labels",
    "issuetype": "issuetype",
    "type": "issuetype",
    "priority": "priority",
    "text": "text",
    "summary": "summary",
    "description": "description",
    "comment": "comment",
    "created": "created",
    "createddate": "created",
    "updated": "updated",
    "updateddate": "updated",
}
_TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')|(?P<op>!=|!~|>=|<=|[=~<>(),])'
    r"|(?P<word>[^\s(),=!~<>\"']+))"
)


@dataclass
class Query:
    where: Pred | None
    order: list[tuple[str, bool]] = field(default_factory=list)
    """(field, descending) pairs."""
    named: list[tuple[str, str]] = field(default_factory=list)
    """(field, literal) pairs for project/key/status, which Jira checks exist."""

    def matches(self, issue: Issue, ctx: Ctx) -> bool:
        return self.where is None or self.where(issue, ctx)


def parse(jql: str) -> Query:
    tokens = _tokenize(jql)
    parser = _Parser(tokens, jql)
    return parser.query()


def _tokenize(jql: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = jql.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise JqlError(
                f"Error in the JQL Query: the character '{text[pos]}' is a reserved "
                f"JQL character (at position {pos})."
            )
        pos = match.end()
        kind = match.lastgroup or "word"
        value = match.group(kind)
        if kind == "str":
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        out.append((kind, value))
    return out


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], jql: str) -> None:
        self.tokens, self.pos, self.jql = tokens, 0, jql
        self.named: list[tuple[str, str]] = []

    def peek(self, offset: int = 0) -> tuple[str, str] | None:
        at = self.pos + offset
        return self.tokens[at] if at < len(self.tokens) else None

    def word(self, *words: str) -> bool:
        token = self.peek()
        return token is not None and token[0] == "word" and token[1].lower() in words

    def take(self) -> tuple[str, str]:
        token = self.peek()
        if token is None:
            raise self.error("Expecting either a value or a field name but reached the end")
        self.pos += 1
        return token

    def error(self, what: str) -> JqlError:
        return JqlError(f"Error in the JQL Query: {what}. The query was: {self.jql}")

    def query(self) -> Query:
        where = None if self.peek() is None or self.word("order") else self.expr()
        order: list[tuple[str, bool]] = []
        if self.word("order"):
            self.take()
            if not self.word("by"):
                raise self.error("Expecting 'by' after 'order'")
            self.take()
            while True:
                name = self.take()[1].lower()
                if name not in FIELDS:
                    raise JqlError(f"Not able to sort using field '{name}'.")
                desc = False
                if self.word("asc", "desc"):
                    desc = self.take()[1].lower() == "desc"
                order.append((FIELDS[name], desc))
                if self.peek() != ("op", ","):
                    break
                self.take()
        if self.peek() is not None:
            raise self.error(f"Expecting operator but got '{self.take()[1]}'")
        return Query(where, order, self.named)

    def expr(self) -> Pred:
        terms = [self.term()]
        while self.word("or"):
            self.take()
            terms.append(self.term())
        return any_of(terms)

    def term(self) -> Pred:
        factors = [self.factor()]
        while self.word("and"):
            self.take()
            factors.append(self.factor())
        return all_of(factors)

    def factor(self) -> Pred:
        if self.word("not"):
            self.take()
            return negate(self.factor())
        if self.peek() == ("op", "("):
            self.take()
            inner = self.expr()
            if self.take() != ("op", ")"):
                raise self.error("Expecting ')'")
            return inner
        return self.clause()

    def clause(self) -> Pred:
        raw = self.take()[1]
        name = FIELDS.get(raw.lower())
        if name is None:
            raise JqlError(
                f"Field '{raw}' does not exist or you do not have permission to view it."
            )
        op = self.operator()
        if op in ("is", "is not"):
            if not self.word("empty", "null"):
                raise self.error(f"Expecting EMPTY after '{op.upper()}'")
            self.take()
            return is_empty(name) if op == "is" else negate(is_empty(name))
        values = self.values() if op in ("in", "not in") else [self.value()]
        if name in ("project", "key", "status"):
            self.named += [(name, v) for v in values if v is not None]
        return compare(name, op, values)

    def operator(self) -> str:
        kind, value = self.take()
        if kind == "op" and value in ("=", "!=", "~", "!~", ">", ">=", "<", "<="):
            return value
        lowered = value.lower()
        if lowered == "in":
            return "in"
        if lowered in ("not", "is"):
            if lowered == "not" and self.word("in"):
                self.take()
                return "not in"
            if lowered == "is" and self.word("not"):
                self.take()
                return "is not"
            return lowered
        raise self.error(f"Expecting operator but got '{value}'")

    def values(self) -> list[str | None]:
        if self.take() != ("op", "("):
            raise self.error("Expecting '(' after IN")
        out = [self.value()]
        while self.peek() == ("op", ","):
            self.take()
            out.append(self.value())
        if self.take() != ("op", ")"):
            raise self.error("Expecting ')' to close the list")
        return out

    def value(self) -> str | None:
        kind, value = self.take()
        if kind == "op":
            raise self.error(f"Expecting a value but got '{value}'")
        if kind == "word" and self.peek() == ("op", "("):
            self.take()
            if self.take() != ("op", ")"):
                raise self.error(f"Function '{value}' takes no arguments here")
            if value.lower() != "currentuser":
                raise JqlError(f"Unable to find JQL function '{value}()'.")
            return "\0me"
        if kind == "word" and value.lower() in ("empty", "null"):
            return None
        return value
