"""A small GraphQL executor for the sandbox: the query language (operations with variables,
aliases, arguments, nested selections, inline fragments and named fragments) over objects
whose fields are Python callables. Enough for the GitHub emulator's handful of types; no
schema validation beyond "this field exists on this type".

    Obj("Query", {"viewer": lambda args: Obj("User", {"login": lambda a: "bot"})})

A field resolver gets its arguments (variables substituted) and returns a scalar, a list, an
:class:`Obj`, or raises :class:`GraphQLError` (reported in ``errors`` with its path, as
GitHub does, beside the ``data`` that did resolve).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GraphQLError", "Obj", "execute", "parse"]

_TOKEN = re.compile(
    r'(?P<ws>[\s,\ufeff]+|#[^\n]*)|(?P<block>"""(?:\\"""|[^"]|"(?!""))*""")'
    r'|(?P<str>"(?:\\.|[^"\\])*")|(?P<num>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)'
    r"|(?P<name>[_A-Za-z][_0-9A-Za-z]*)|(?P<spread>\.\.\.)|(?P<punct>[!$():=@\[\]{}|&])"
)


class GraphQLError(Exception):
    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind


@dataclass
class Obj:
    """An object of GraphQL type ``typename``: field name → resolver(args)."""

    typename: str
    fields: dict[str, Callable[[dict[str, Any]], Any]]


@dataclass
class Field:
    name: str
    alias: str
    args: dict[str, Any]
    selections: list[Any] = field(default_factory=list)


@dataclass
class Fragment:
    on: str | None
    selections: list[Any]


@dataclass
class Operation:
    kind: str  # query | mutation
    variables: dict[str, Any]  # name → default value
    selections: list[Any]


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None:
                raise GraphQLError(f"Parse error on {text[pos : pos + 10]!r}")
            pos = match.end()
            kind = match.lastgroup or ""
            if kind != "ws":
                self.tokens.append((kind, match.group()))
        self.i = 0
        self.fragments: dict[str, list[Any]] = {}

    def peek(self, value: str | None = None) -> bool:
        return self.i < len(self.tokens) and (value is None or self.tokens[self.i][1] == value)

    def take(self, value: str | None = None) -> str:
        if not self.peek(value):
            found = self.tokens[self.i][1] if self.i < len(self.tokens) else "end of query"
            raise GraphQLError(
                f"Parse error on {found!r}" + (f" (expected {value})" if value else "")
            )
        self.i += 1
        return self.tokens[self.i - 1][1]

    def document(self) -> Operation:
        operations: list[Operation] = []
        while self.peek():
            if self.peek("fragment"):
                self.take()
                name = self.take()
                self.take("on")
                self.take()
                self.fragments[name] = self.selection_set()
            elif self.peek("{"):
                operations.append(Operation("query", {}, self.selection_set()))
            else:
                kind = self.take()
                if kind not in ("query", "mutation"):
                    raise GraphQLError(f"Parse error on {kind!r}")
                if self.tokens[self.i][0] == "name":
                    self.take()
                variables = self.variable_definitions()
                operations.append(Operation(kind, variables, self.selection_set()))
        if len(operations) != 1:
            raise GraphQLError("exactly one operation per request is supported")
        return operations[0]

    def variable_definitions(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if not self.peek("("):
            return found
        self.take("(")
        while not self.peek(")"):
            self.take("$")
            name = self.take()
            self.take(":")
            self.type_ref()
            found[name] = None
            if self.peek("="):
                self.take("=")
                found[name] = self.value()
        self.take(")")
        return found

    def type_ref(self) -> None:
        if self.peek("["):
            self.take("[")
            self.type_ref()
            self.take("]")
        else:
            self.take()
        if self.peek("!"):
            self.take("!")

    def selection_set(self) -> list[Any]:
        self.take("{")
        items: list[Any] = []
        while not self.peek("}"):
            if self.peek("..."):
                self.take("...")
                if self.peek("on"):
                    self.take("on")
                    items.append(Fragment(self.take(), self.selection_set()))
                else:
                    items.append(("spread", self.take()))
                continue
            name = alias = self.take()
            if self.peek(":"):
                self.take(":")
                name = self.take()
            args: dict[str, Any] = {}
            if self.peek("("):
                self.take("(")
                while not self.peek(")"):
                    key = self.take()
                    self.take(":")
                    args[key] = self.value()
                self.take(")")
            while self.peek("@"):  # directives are accepted and ignored
                self.take("@")
                self.take()
                if self.peek("("):
                    while not self.peek(")"):
                        self.i += 1
                    self.take(")")
            sub = self.selection_set() if self.peek("{") else []
            items.append(Field(name, alias, args, sub))
        self.take("}")
        return items

    def value(self) -> Any:
        kind, text = self.tokens[self.i]
        if text == "$":
            self.take("$")
            return ("var", self.take())
        if text == "[":
            self.take("[")
            items = []
            while not self.peek("]"):
                items.append(self.value())
            self.take("]")
            return items
        if text == "{":
            self.take("{")
            obj = {}
            while not self.peek("}"):
                key = self.take()
                self.take(":")
                obj[key] = self.value()
            self.take("}")
            return obj
        self.i += 1
        if kind == "str":
            return bytes(text[1:-1], "utf-8").decode("unicode_escape")
        if kind == "block":
            return text[3:-3]
        if kind == "num":
            return float(text) if any(c in text for c in ".eE") else int(text)
        return {"true": True, "false": False, "null": None}.get(text, text)  # enums as str


def parse(text: str) -> tuple[Operation, dict[str, list[Any]]]:
    parser = _Parser(text)
    return parser.document(), parser.fragments


def _substitute(value: Any, variables: dict[str, Any]) -> Any:
    if isinstance(value, tuple) and value[:1] == ("var",):
        return variables.get(value[1])
    if isinstance(value, list):
        return [_substitute(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, variables) for k, v in value.items()}
    return value


def execute(
    text: str, variables: dict[str, Any] | None, root: Callable[[str], Obj]
) -> dict[str, Any]:
    """Run one operation; ``root(kind)`` gives the Query or Mutation object."""
    try:
        operation, fragments = parse(text)
    except GraphQLError as exc:
        return {"errors": [{"message": exc.message}]}
    values = {**operation.variables, **(variables or {})}
    errors: list[dict[str, Any]] = []

    def resolve(selections: list[Any], obj: Obj, path: list[Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for item in selections:
            if isinstance(item, tuple):
                item = Fragment(None, fragments.get(item[1], []))
            if isinstance(item, Fragment):
                if item.on is None or item.on == obj.typename:
                    out.update(resolve(item.selections, obj, path))
                continue
            if item.name == "__typename":
                out[item.alias] = obj.typename
                continue
            here = [*path, item.alias]
            resolver = obj.fields.get(item.name)
            if resolver is None:
                message = f"Field '{item.name}' doesn't exist on type '{obj.typename}'"
                errors.append({"message": message, "path": here})
                out[item.alias] = None
                continue
            try:
                value = resolver(_substitute(item.args, values))
            except GraphQLError as exc:
                error = {"message": exc.message, "path": here}
                if exc.kind:
                    error["type"] = exc.kind
                errors.append(error)
                out[item.alias] = None
                continue
            out[item.alias] = complete(value, item, here)
        return out

    def complete(value: Any, item: Field, path: list[Any]) -> Any:
        if isinstance(value, Obj):
            return resolve(item.selections, value, path)
        if isinstance(value, list):
            return [complete(v, item, [*path, n]) for n, v in enumerate(value)]
        return value

    data = resolve(operation.selections, root(operation.kind), [])
    result: dict[str, Any] = {"data": data}
    if errors:
        result["errors"] = errors
    return result
