"""What the harness itself saw in a round, beside what the model says it saw: the tool calls the
runtime reported (the wire), and the facts of a report. Two rules read it instead of the
model's self-report:

- ``stalled`` ("two rounds, zero new facts") counts the facts the harness finds new in a round
  — evidence items, register entries, sources, adjacent problems, actions, questions answered,
  tool results never seen before — never the report's own ``new_facts`` list, which a model
  can repeat or omit at will.
- G4 / G_BLOCKER_FORCE ("declared unavailable by inference and not because of a real error")
  count a source as unavailable only if a tool call to it failed in this run.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness_cli.loop.report import AdjacentProblem, CompletionReport, UncheckedSource

WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "TodoWrite"})
"""Calls that change files are the model's own notes, not evidence about the ticket."""

# Words that name a tool or a kind of thing rather than the source itself: "orders read
# replica" must not match a Read of message.json because both say "read".
_GENERIC = frozenset(
    {"read", "grep", "glob", "write", "edit", "file", "files", "path", "the", "and", "for",
     "with", "from", "into", "mcp", "tool", "tools", "search", "query", "get", "list", "api",
     "server", "service", "data", "source", "json", "txt", "md", "http", "https", "www", "com",
     "tmp", "home", "var", "usr", "case", "workspaces", "workspace", "harness", "message"}
)  # fmt: skip
_TOKEN = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class ToolUse:
    """One tool call as the runtime reported it (``services.runtime.ToolEvent``), kept small."""

    name: str
    target: str
    """The call's input, as canonical JSON (cut to 500 characters)."""
    ok: bool
    """A result came back and it was not an error."""
    output_digest: str
    error: str = ""
    """The start of the error text, when the call failed."""

    @classmethod
    def from_event(cls, event: Any) -> ToolUse:
        """From an ``services.runtime.ToolEvent`` (or anything with its attributes)."""
        target = json.dumps(getattr(event, "input", {}) or {}, sort_keys=True, default=str)[:500]
        output = str(getattr(event, "output", "") or "")
        done = bool(getattr(event, "done", False))
        failed = bool(getattr(event, "is_error", False)) or not done
        return cls(
            name=str(getattr(event, "name", "")),
            target=target,
            ok=not failed,
            output_digest=hashlib.sha256(output.encode()).hexdigest()[:16],
            error=(output or ("no result came back" if not done else ""))[:200] if failed else "",
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "target": self.target,
            "ok": self.ok,
            "output_digest": self.output_digest,
            "error": self.error,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolUse:
        return cls(
            name=str(data.get("name", "")),
            target=str(data.get("target", "")),
            ok=bool(data.get("ok", False)),
            output_digest=str(data.get("output_digest", "")),
            error=str(data.get("error", "")),
        )


@dataclass(frozen=True)
class Evidence:
    """What the loop hands the gates about the run so far (None where it is unknown, e.g. a
    report checked by hand with ``harness gates``)."""

    run_tools: tuple[ToolUse, ...] = ()
    """Every tool call of this investigation run, this round's included (G4)."""
    round_tools: tuple[ToolUse, ...] = ()
    """This round's calls (stalled)."""
    seen: frozenset[str] = field(default_factory=frozenset)
    """The facts of every earlier round (stalled)."""
    catalog: tuple[str, ...] = ()
    """The MCP servers this run could reach (agent-config/mcp.json): the sources EQ1 holds a
    HARD citation to, and the ones the exit line says were never queried."""


def _norm(text: str) -> str:
    return " ".join(str(text).lower().split())


def _source_key(source: UncheckedSource | str) -> str:
    return _norm(source if isinstance(source, str) else source.name)


def _problem_key(problem: AdjacentProblem | str) -> str:
    if isinstance(problem, str):
        return _norm(problem)
    return f"{_norm(problem.summary)}|{_norm(problem.status)}|{_norm(problem.blocker)}"


def report_facts(report: CompletionReport | None) -> frozenset[str]:
    """Everything a report asserts that could be new: one string per item."""
    if report is None:
        return frozenset()
    out: set[str] = set()

    def add(kind: str, *parts: str) -> None:
        values = [_norm(p) for p in parts]
        if any(values):
            out.add(f"{kind}:{'|'.join(values)}")

    cause = report.root_cause
    if cause is not None:
        add("cause", cause.summary)
        for e in cause.evidence:
            add("evidence", e.claim, e.source)
    for q in report.open_questions:
        add("question", q)
    for c in report.contradiction_register:
        add("contradiction", c)
    for a in report.assumption_register:
        add("assumption", a)
    for s in report.unchecked_sources:
        add("source", _source_key(s), "" if isinstance(s, str) else s.access_status)
    for p in report.adjacent_problems:
        add("adjacent", _problem_key(p))
    for action in report.actions:
        add("action", action.description)
    return frozenset(out)


def tool_facts(tools: Iterable[ToolUse]) -> frozenset[str]:
    """A tool result is a fact the first time its output is seen (re-reading the same file is
    not); a failed call is a fact too (that source is unavailable)."""
    return frozenset(
        f"tool:{t.name}:{t.target}:{t.output_digest if t.ok else 'error'}"
        for t in tools
        if t.name not in WRITE_TOOLS
    )


def round_facts(
    report: CompletionReport | None,
    previous: CompletionReport | None,
    tools: Iterable[ToolUse] = (),
) -> frozenset[str]:
    """This round's facts: the report's, its tool results', and every open question or
    unchecked source of the previous report that is gone now (answered or checked)."""
    settled: set[str] = set()
    if previous is not None and report is not None:
        now_q = {_norm(q) for q in report.open_questions}
        now_s = {_source_key(s) for s in report.unchecked_sources}
        settled |= {
            f"answered:{_norm(q)}" for q in previous.open_questions if _norm(q) not in now_q
        }
        settled |= {
            f"checked:{_source_key(s)}"
            for s in previous.unchecked_sources
            if _source_key(s) not in now_s
        }
    return report_facts(report) | tool_facts(tools) | frozenset(settled)


def new_fact_count(
    report: CompletionReport | None,
    previous: CompletionReport | None,
    evidence: Evidence | None,
) -> int:
    """Facts of this round not seen in any earlier one. Without the loop's record (a report
    checked by hand), "earlier" is the previous report alone."""
    if evidence is None:
        before = round_facts(previous, None) if previous is not None else frozenset()
        return len(round_facts(report, previous) - before)
    return len(round_facts(report, previous, evidence.round_tools) - evidence.seen)


def _tokens(text: str) -> set[str]:
    return {t for t in _TOKEN.findall(text.lower()) if len(t) >= 3 and t not in _GENERIC}


def calls_to(source: UncheckedSource | str, tools: Sequence[ToolUse]) -> list[ToolUse]:
    """The tool calls aimed at ``source``: a word of its name (not a generic one like "read"
    or "file") in the call's tool name or input — ``orders replica`` ↔ ``Read
    /srv/replica/orders.db``, ``datadog`` ↔ ``mcp__datadog__search_logs``."""
    words = _tokens(_source_key(source))
    if not words:
        return []
    return [t for t in tools if words & _tokens(f"{t.name.replace('__', ' ')} {t.target}")]


def failed_call(source: UncheckedSource | str, tools: Sequence[ToolUse]) -> ToolUse | None:
    """The failed call that shows ``source`` unavailable in this run, if there is one."""
    return next((t for t in calls_to(source, tools) if not t.ok), None)


def _server_of(name: str) -> str | None:
    """``mcp__<server>__<tool>`` → server (None for a built-in tool)."""
    if not name.startswith("mcp__"):
        return None
    server, sep, _ = name[5:].partition("__")
    return server if sep else None


def queried(tools: Iterable[ToolUse]) -> dict[str, bool]:
    """Each MCP server called this run → whether some call to it answered (not an error)."""
    found: dict[str, bool] = {}
    for t in tools:
        server = _server_of(t.name)
        if server is not None:
            found[server] = found.get(server, False) or t.ok
    return found


def cited_servers(source: str, catalog: Sequence[str]) -> list[str]:
    """The catalog's servers a citation names: ``mcp__logs__search_logs``, ``logs
    (search_logs)``, ``metrics: checkout.price_mismatch`` — a server's name as a word."""
    words = set(_TOKEN.findall(source.lower().replace("__", " ")))
    return [s for s in catalog if s.lower() in words or f"mcp__{s.lower()}__" in source.lower()]


def unbacked_citation(source: str, tools: Sequence[ToolUse] | None, catalog: Sequence[str]) -> str:
    """EQ1 on the wire: the catalog server a HARD citation names that no call of this run got
    an answer from ("" when the citation is backed, names no catalog source, or the run's
    calls are unknown — a report checked by hand)."""
    if tools is None or not catalog:
        return ""
    answered = {s for s, ok in queried(tools).items() if ok}
    return next((s for s in cited_servers(source, catalog) if s not in answered), "")


def sources_line(tools: Iterable[ToolUse], catalog: Sequence[str]) -> str:
    """``sources: logs, metrics (docs failed; tracker, db never queried)`` — for the exit
    line and ANALYSIS.md; "" when the run had no MCP catalog and made no MCP call."""
    seen = queried(tools)
    if not seen and not catalog:
        return ""
    ok = [s for s, good in seen.items() if good]
    failed = [s for s, good in seen.items() if not good]
    never = [s for s in catalog if s not in seen]
    notes = ([f"{', '.join(failed)} failed"] if failed else []) + (
        [f"{', '.join(never)} never queried"] if never else []
    )
    return f"sources: {', '.join(ok) or 'none'}" + (f" ({'; '.join(notes)})" if notes else "")
