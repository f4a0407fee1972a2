"""The MR's proof-of-work block, written by the harness from the acceptance record of the head.

Style SOP: "Proof of work has to be reproducible from a command. 'Verified locally' doesn't
count. pytest tests/test_foo.py::test_bar -v with the real command and the relevant 3 lines of
output does." The model used to write that block itself — the demo's said "6 passed" while the
record for that head said "5 passed". Now every command block the model put in the description
is dropped, and the harness appends the commands it ran itself, with their exit codes and the
lines that matter, for the commit they ran on.
"""

from __future__ import annotations

import re

from harness_cli.delivery.acceptance import AcceptanceRecord, CheckRun
from harness_cli.delivery.style import _FENCE, _code_mask, looks_like_command

MAX_LINES = 8
"""Output lines kept per check: the failures first, then the summary."""
_FAILURE = re.compile(r"^(FAILED|ERROR|E\s{2,}|Traceback|AssertionError)")
_BACKTICK_COMMAND = re.compile(r"`([^`\n]+)`")


def strip_model_proof(description: str) -> str:
    """The description without the command blocks the model wrote (a command and what it says
    the output was), nor output blocks introduced by a backticked command — those are the
    harness's to write."""
    lines = description.splitlines()
    code = _code_mask(lines)
    runs: list[tuple[int, int]] = []
    index = 0
    while index < len(lines):
        if not code[index]:
            index += 1
            continue
        start = index
        while index < len(lines) and code[index]:
            index += 1
        runs.append((start, index))
    drop: set[int] = set()
    for start, end in runs:
        content = [ln.strip() for ln in lines[start:end] if not _FENCE.match(ln)]
        intro = _previous_text(lines, start)
        claimed = intro is not None and any(
            looks_like_command(m) for m in _BACKTICK_COMMAND.findall(lines[intro])
        )
        if any(looks_like_command(ln) for ln in content) or claimed:
            drop.update(range(start, end))
            if claimed and intro is not None and lines[intro].rstrip().endswith(":"):
                drop.add(intro)
    text = "\n".join(line for i, line in enumerate(lines) if i not in drop)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _previous_text(lines: list[str], start: int) -> int | None:
    index = start - 1
    while index >= 0 and not lines[index].strip():
        index -= 1
    return index if index >= 0 else None


def relevant_lines(check: CheckRun) -> list[str]:
    """The lines a reader checks first: failures, then the last lines (pytest's summary)."""
    output = [ln.rstrip() for ln in check.output_tail.splitlines() if ln.strip()]
    failures = [ln for ln in output if _FAILURE.match(ln)][: MAX_LINES - 3]
    tail = [ln for ln in output[-3:] if ln not in failures]
    return [ln[:200] for ln in failures + tail][:MAX_LINES] or ["(no output)"]


def render_proof(record: AcceptanceRecord | None, head_sha: str) -> str:
    """The block the harness appends to every description it writes: what it ran, on which
    commit, and how each command exited — straight from the record, never from model text."""
    if record is None or not record.checks:
        return (
            f"The harness has no run of the required checks for {head_sha[:12] or 'this head'} "
            "yet, so this MR stays a draft.\n\n    $ (no required check has run)\n    (none)"
        )
    on = record.head_sha[:12]
    if record.head_sha == head_sha and not record.dirty_paths:
        where = f"The harness ran the required checks itself on {on}, the head of this MR:"
    else:
        where = (
            f"The harness ran the required checks itself on {on}; the head of this MR is "
            f"{head_sha[:12]}, which they have not run on, so it stays a draft:"
        )
    lines = [where, ""]
    for check in record.checks:
        lines.append(f"    $ {check.command}")
        lines += [f"    {ln}" for ln in relevant_lines(check)]
        exit_text = (
            f"killed after a timeout ({check.error})"
            if check.timed_out
            else check.error or f"exit {check.exit_code}"
        )
        lines.append(f"    ({exit_text})")
    if record.reason:
        lines += ["", f"Not accepted: {record.reason}."]
    return "\n".join(lines)


def compose_description(model_text: str, record: AcceptanceRecord | None, head_sha: str) -> str:
    """The model's prose and Changes list, then the harness's proof of work."""
    body = strip_model_proof(model_text)
    return (
        f"{body}\n\n{render_proof(record, head_sha)}\n" if body else render_proof(record, head_sha)
    )
