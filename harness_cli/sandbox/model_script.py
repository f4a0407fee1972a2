"""The scripted "model" behind the Anthropic emulator: a YAML format, its loader and matcher.

A script says what the model answers, keyed by ROLE and CONVERSATION STATE read from the
request itself — never by a global call counter, because the claude CLI makes side calls
(a tool-less title call, for one) that would otherwise shift every later answer.

- The role is the ``[harness-role: NAME]`` marker found in the system prompt (including
  ``role: "system"`` messages) or in the first user message; without one it is ``default``.
- Each role holds rules; the first whose ``when:`` holds for the request answers with its
  ``reply:``. When none does, the ``default`` role's rules are tried, then the request is
  *unmatched*: it gets a text reply naming the role and state, and the emulator records it.
- Tool calls use the claude CLI's tool names and inputs (Read {file_path}, Write {file_path,
  content}, Edit {file_path, old_string, new_string}, Glob {pattern}, Grep {pattern, path},
  Bash {command}), so one script drives both the CLI and the harness's own tool loop.
- Strings in a reply may hold ``{name}`` placeholders: the script's ``vars``, the loader's
  variables, then ``cwd`` (from the request's "working directory" line), ``role`` and ``turn``;
  later sources win. Unknown names are left as written, so JSON braces need no escaping.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from harness_cli.errors import ConfigError

__all__ = [
    "DEFAULT_ROLE",
    "SCRIPTS_DIR",
    "Match",
    "Reply",
    "RequestView",
    "Rule",
    "Script",
    "ToolCall",
    "ToolResultView",
    "When",
    "load_script",
    "match_request",
]

DEFAULT_ROLE = "default"
SCRIPTS_DIR = Path(__file__).with_name("scripts")
ROLE_MARKER = re.compile(r"\[harness-role:\s*([A-Za-z0-9_.:-]+)\s*\]")
# The claude CLI writes "Primary working directory: /x", the harness "Working directory: /x".
CWD_LINE = re.compile(r"(?:primary\s+)?working\s+directory\s*:\s*(\S+)", re.IGNORECASE)
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

StopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"]


class When(BaseModel):
    """Conditions over the request; all given ones must hold (none given: always)."""

    model_config = ConfigDict(extra="forbid")

    turn: int | None = None
    """Exactly this many assistant turns are already in ``messages``."""
    turn_at_least: int | None = None
    """At least this many assistant turns are already in ``messages``."""
    tools: Literal["present", "absent"] | None = None
    """Whether the request offers any tools (the CLI's side calls send none)."""
    has_tool: str | None = None
    """The request offers a tool of this name."""
    last_tool: str | None = None
    """The latest user turn answers a call of this tool name."""
    last_tool_result_contains: str | None = None
    """Some tool result in the latest user turn contains this text."""
    last_tool_result_is_error: bool | None = None
    """true: some tool result in the latest user turn is an error; false: there are results
    and none is an error."""
    user_contains: str | None = None
    """The user's own text (not tool results) anywhere in the conversation contains this."""
    user_matches: str | None = None
    """A regular expression found (``re.search``, multi-line) in the user's own text."""
    system_contains: str | None = None
    """The system prompt contains this text."""

    def holds(self, view: RequestView) -> bool:
        results = view.tool_results
        checks = [
            self.turn is None or view.turn == self.turn,
            self.turn_at_least is None or view.turn >= self.turn_at_least,
            self.tools is None or (self.tools == "present") == bool(view.tools),
            self.has_tool is None or self.has_tool in view.tools,
            self.last_tool is None or any(r.tool_name == self.last_tool for r in results),
            self.last_tool_result_contains is None
            or any(self.last_tool_result_contains in r.text for r in results),
            self.last_tool_result_is_error is None
            or (
                any(r.is_error for r in results)
                if self.last_tool_result_is_error
                else bool(results) and not any(r.is_error for r in results)
            ),
            self.user_contains is None or self.user_contains in view.user_text,
            self.user_matches is None
            or re.search(self.user_matches, view.user_text, re.MULTILINE) is not None,
            self.system_contains is None or self.system_contains in view.system_text,
        ]
        return all(checks)


class ToolCall(BaseModel):
    """One ``tool_use`` block the model emits."""

    model_config = ConfigDict(extra="forbid")

    name: str
    """Tool name as the client declares it (the claude CLI's names: Read, Write, Edit…)."""
    input: dict[str, Any] = Field(default_factory=dict)
    """The tool's input object; string values may hold ``{placeholders}``."""


class Reply(BaseModel):
    """What the model answers for one turn: text, tool calls, or both (text comes first)."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    """A text block."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """``tool_use`` blocks, in order."""
    stop_reason: StopReason | None = None
    """Overrides the derived stop reason (``tool_use`` with tool calls, else ``end_turn``)."""

    @model_validator(mode="after")
    def _not_empty(self) -> Reply:
        if self.text is None and not self.tool_calls:
            raise ValueError("a reply needs text, tool_calls or both")
        return self


class Rule(BaseModel):
    """A condition and the reply given when it holds."""

    model_config = ConfigDict(extra="forbid")

    name: str = ""
    """Shown in the emulator's records, so a failing scenario says which rule answered."""
    when: When = Field(default_factory=When)
    """Conditions; an empty ``when`` always holds."""
    capture: dict[str, str] = Field(default_factory=dict)
    """Variables read from the user's text: ``name: regex`` gives ``{name}`` (the first
    match's first group, else the whole match) and ``{name_1}``, ``{name_2}`` … (every match),
    e.g. the discussion ids a prompt names, which a scripted reply must echo."""
    reply: Reply
    """The answer."""


class Script(BaseModel):
    """A whole script: rules per role."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """Format version of this file."""
    description: str = ""
    """What scenario the script plays."""
    vars: dict[str, str] = Field(default_factory=dict)
    """Default values for ``{placeholders}``; the loader's variables override them."""
    roles: dict[str, list[Rule]] = Field(default_factory=dict)
    """Rules per role; ``default`` also answers what a role's own rules leave unmatched."""
    captures: dict[str, str] = Field(default_factory=dict)
    """``{name}`` placeholders read from the request: name → a regular expression searched in
    the user's own text; its first group (or the whole match) is the value, e.g.
    ``iteration: 'iteration (\\d+) of'``. A capture that does not match is left unset."""

    @field_validator("captures")
    @classmethod
    def _patterns(cls, value: dict[str, str]) -> dict[str, str]:
        for name, pattern in value.items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"capture {name!r}: not a regular expression ({exc})") from None
        return value


@dataclass(frozen=True)
class ToolResultView:
    """One ``tool_result`` block of the latest user turn."""

    tool_name: str | None
    text: str
    is_error: bool


@dataclass(frozen=True)
class RequestView:
    """The parts of a Messages request the rules look at."""

    role: str
    turn: int
    tools: tuple[str, ...]
    system_text: str
    user_text: str
    tool_results: tuple[ToolResultView, ...]
    cwd: str | None

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> RequestView:
        raw = body.get("messages")
        messages = [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []
        system_parts = [_text_of(body.get("system"))]
        system_parts += [_text_of(m.get("content")) for m in messages if m.get("role") == "system"]
        system_text = "\n".join(p for p in system_parts if p)
        users = [m for m in messages if m.get("role") == "user"]
        user_text = "\n".join(_text_of(m.get("content")) for m in users)
        first_user = _text_of(users[0].get("content")) if users else ""
        found = ROLE_MARKER.search(system_text) or ROLE_MARKER.search(first_user)
        cwd = CWD_LINE.search(system_text) or CWD_LINE.search(user_text)
        tools = body.get("tools")
        return cls(
            role=found.group(1) if found else DEFAULT_ROLE,
            turn=_assistant_turns(messages),
            tools=tuple(str(t.get("name")) for t in tools if isinstance(t, dict) and t.get("name"))
            if isinstance(tools, list)
            else (),
            system_text=system_text,
            user_text=user_text,
            tool_results=_latest_tool_results(messages),
            cwd=cwd.group(1) if cwd else None,
        )

    def describe(self) -> str:
        """The state in one line, for unmatched replies and records."""
        results = ", ".join(
            f"{r.tool_name or '?'}({'error' if r.is_error else 'ok'})" for r in self.tool_results
        )
        return (
            f"role {self.role!r}, turn {self.turn}, tools {'present' if self.tools else 'absent'}"
            f", last tool results [{results}]"
        )


@dataclass(frozen=True)
class Match:
    """The outcome of matching one request: the rendered reply, or why nothing matched."""

    view: RequestView
    role: str
    rule: str | None
    text: str | None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    stop_reason: str | None = None
    unmatched: str | None = None


def _text_of(content: Any) -> str:
    """The text of a system prompt or message content (string or blocks), tool results excluded."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _assistant_turns(messages: list[dict[str, Any]]) -> int:
    """Runs of assistant messages: a client may split one turn into consecutive messages,
    with ``role: "system"`` messages in between, and that is still one turn."""
    turns = 0
    previous: str | None = None
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        if role == "assistant" and previous != "assistant":
            turns += 1
        previous = str(role)
    return turns


def _latest_tool_results(messages: list[dict[str, Any]]) -> tuple[ToolResultView, ...]:
    convo = [m for m in messages if m.get("role") != "system"]
    last = convo[-1] if convo else {}
    if last.get("role") != "user" or not isinstance(last.get("content"), list):
        return ()
    names: dict[str, str] = {}
    for message in convo:
        if message.get("role") == "assistant" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    names[str(block.get("id"))] = str(block.get("name"))
    results = []
    for block in last["content"]:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            inner = block.get("content")
            results.append(
                ToolResultView(
                    tool_name=names.get(str(block.get("tool_use_id"))),
                    text=inner if isinstance(inner, str) else _text_of(inner),
                    is_error=bool(block.get("is_error")),
                )
            )
    return tuple(results)


def _render(value: Any, variables: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: variables.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [_render(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: _render(v, variables) for k, v in value.items()}
    return value


def _captured(patterns: Mapping[str, str], text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, pattern in patterns.items():
        values = [m.group(1) if m.groups() else m.group(0) for m in re.finditer(pattern, text)]
        values = list(dict.fromkeys(values))
        if values:
            found[name] = values[0]
        found.update({f"{name}_{n}": v for n, v in enumerate(values, 1)})
    return found


def match_request(script: Script | None, view: RequestView) -> Match:
    """Find the first rule of the request's role (then of ``default``) that holds."""
    if script is None:
        return Match(view, view.role, None, None, unmatched="no script is loaded")
    roles = [view.role] if view.role == DEFAULT_ROLE else [view.role, DEFAULT_ROLE]
    for role in roles:
        for index, rule in enumerate(script.roles.get(role, [])):
            if not rule.when.holds(view):
                continue
            variables = {
                **script.vars,
                **_captured(script.captures, view.user_text),
                "role": view.role,
                "turn": str(view.turn),
            }
            if view.cwd:
                variables["cwd"] = view.cwd
            variables.update(_captured(rule.capture, view.user_text))
            reply = rule.reply
            name = rule.name or f"rule {index}"
            return Match(
                view=view,
                role=role,
                rule=name if role == view.role else f"{role}: {name}",
                text=_render(reply.text, variables) if reply.text is not None else None,
                tool_calls=[(c.name, _render(c.input, variables)) for c in reply.tool_calls],
                stop_reason=reply.stop_reason,
            )
    known = "" if view.role in script.roles else " (the script has no such role)"
    return Match(view, view.role, None, None, unmatched=f"no rule matched {view.describe()}{known}")


def load_script(
    source: Script | Mapping[str, Any] | Path | str,
    variables: Mapping[str, str] | None = None,
) -> Script:
    """A script from a YAML file, a shipped script's name (``smoke``), an inline dict or a
    ``Script``; ``variables`` override the script's own ``vars``."""
    origin = "inline script"
    if isinstance(source, Script):
        script = source.model_copy(deep=True)
    else:
        data: Any = source
        if isinstance(source, str | Path):
            path = _script_path(source)
            origin = str(path)
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
            except OSError as exc:
                raise ConfigError(
                    f"model script {path} cannot be read: {exc.strerror}",
                    hint=f"shipped scripts: {', '.join(shipped_scripts())}",
                ) from None
            except yaml.YAMLError as exc:
                raise ConfigError(f"model script {path} is not valid YAML: {exc}") from None
        try:
            script = Script.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(top level)"
            raise ConfigError(
                f"model script {origin}: {where}: {first['msg']}",
                hint="see harness_cli/sandbox/scripts/smoke.yaml for the format",
            ) from None
    if variables:
        script.vars.update(variables)
    return script


def shipped_scripts() -> list[str]:
    return sorted(p.stem for p in SCRIPTS_DIR.glob("*.yaml"))


def _script_path(source: str | Path) -> Path:
    if isinstance(source, Path) or source.endswith((".yaml", ".yml")) or "/" in source:
        return Path(source)
    return SCRIPTS_DIR / f"{source}.yaml"
