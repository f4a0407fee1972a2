"""harness session-sync start|prompt|fetch|status — claude sessions through the git session store.

``start`` and ``prompt`` are claude hooks (cron/hooks/*.sh): they read the hook event as JSON on
stdin and answer on stdout with ``hookSpecificOutput.additionalContext``, which claude adds to
the model's context. A hook must never stop the operator's prompt: a failed sync is one line on
stderr and exit 1 (a non-blocking hook error) — never exit 2, which makes claude block and
erase the prompt.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from harness_cli.commands import new_app
from harness_cli.errors import HarnessError, InputError
from harness_cli.logs import redact
from harness_cli.memory.resume.model import (
    HookInput,
    SessionEnv,
    SessionSyncSettings,
    check_session_id,
)
from harness_cli.memory.resume.start import fetch_loop, fetch_once, list_sessions, session_start
from harness_cli.memory.resume.sync import load_state, sync_prompt
from harness_cli.output import emit
from harness_cli.result import Result

if TYPE_CHECKING:
    from harness_cli.memory.resume.model import HookInput

app = new_app(
    "Sync claude CLI sessions through the git session store (hooks call it).",
    no_args_is_help=True,
)


def _hook_input(cwd: Path | None, session_id: str | None) -> HookInput:
    if cwd is not None:
        return HookInput(session_id=check_session_id(session_id or "none"), cwd=str(cwd.absolute()))
    if sys.stdin.isatty():
        raise InputError(
            "no hook event on stdin",
            hint="claude pipes it to the hook; by hand, pass --cwd DIR (and --session-id)",
        )
    return HookInput.parse(sys.stdin.read())


def _answer(event: str, context: str) -> None:
    """The documented hook output: claude injects ``additionalContext`` into the model's
    context (plain stdout works for these two events too, JSON is explicit)."""
    if context:
        out = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")


def _as_hook(run: Callable[[], None]) -> None:
    try:
        run()
    except HarnessError as exc:
        sys.stderr.write(f"harness session-sync: {redact(exc.line())}\n")
        raise typer.Exit(1) from None


@app.command("start")
def start(
    cwd: Path | None = typer.Option(
        None, "--cwd", help="Look up this directory instead of reading a hook event on stdin."
    ),
    session_id: str | None = typer.Option(None, "--session-id", help="With --cwd: claude's id."),
    uuid_only: bool = typer.Option(
        False, "--uuid-only", help="Print only the UUID (for `claude --resume $(…)`)."
    ),
    no_fetch: bool = typer.Option(False, "--no-fetch", help="Use the local copy as it is."),
    no_restore: bool = typer.Option(
        False, "--no-restore", help="Do not copy a missing transcript into ~/.claude."
    ),
) -> None:
    """SessionStart hook: the session UUID recorded for this working directory."""

    def run() -> None:
        info = session_start(
            _hook_input(cwd, session_id),
            SessionEnv.from_env(),
            fetch=not no_fetch,
            restore=not no_restore,
        )
        if uuid_only:
            if info.session_id:
                sys.stdout.write(info.session_id + "\n")
            return
        _answer("SessionStart", info.context)

    _as_hook(run)


@app.command("prompt")
def prompt() -> None:
    """UserPromptSubmit hook: fetch, take the other machine's delta, push ours; inject it."""

    def run() -> None:
        result = sync_prompt(_hook_input(None, None), SessionEnv.from_env())
        _answer("UserPromptSubmit", result.context)

    _as_hook(run)


@app.command("fetch")
def fetch(
    loop: float | None = typer.Option(
        None, "--loop", metavar="SECONDS", help="Keep fetching every SECONDS (the reference: 5)."
    ),
    cycles: int | None = typer.Option(
        None, "--cycles", min=1, help="With --loop: stop after N fetches (default: never)."
    ),
) -> None:
    """Fetch the session store (once, or as the background fetcher with --loop)."""

    env, settings = SessionEnv.from_env(), SessionSyncSettings()
    result = Result("session-sync fetch")
    if loop is None:
        once = fetch_once(env, settings, wait=settings.lock_timeout)
        result.data = {"updated": once.updated, "head": once.head}
        if once.skipped:
            result.skipped.append(once.skipped)
        else:
            result.changed.append(f"fetched {env.repo}" + ("" if once.updated else " (no change)"))
    else:
        if loop <= 0:
            raise InputError(f"--loop {loop} must be more than 0 seconds")
        updates = fetch_loop(env, settings, interval=loop, cycles=cycles)
        result.data = {"updates": updates, "cycles": cycles}
        result.changed.append(f"fetched {env.repo}; {updates} fetches brought something new")
    emit(result)


@app.command("status")
def status() -> None:
    """The sessions in the local copy of the store, and this machine's watermarks."""

    env = SessionEnv.from_env()
    result = Result("session-sync status", columns=["SESSION", "CWD", "LAST", "LINES", "TAKEN"])
    rows: list[dict[str, Any]] = []
    for meta in list_sessions(env):
        state = load_state(env, meta.session_id)
        taken = ", ".join(f"{m}:{n}" for m, n in sorted(state.delivered.items())) or "-"
        rows.append(
            {
                **meta.model_dump(mode="json"),
                "delivered": state.delivered,
                "pushed": state.pushed_lines,
            }
        )
        when = meta.updated_at.strftime("%Y-%m-%d %H:%M")
        result.rows.append(
            [meta.session_id, meta.cwd, f"{meta.machine} {when}", str(meta.lines), taken]
        )
    result.data = {"machine": env.machine, "repo": str(env.repo), "sessions": rows}
    if not rows:
        result.messages.append(f"no sessions in {env.repo} yet (machine {env.machine})")
    emit(result)
