"""The `harness` command: a lazy table of subcommands and the one error handler at the edge.

`poll-slack` runs every minute from cron, so start-up must stay cheap: the table below names
each subcommand's module, and a module is imported only when its subcommand runs (or when its
own ``--help`` is asked for). Nothing here imports an SDK.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from harness_cli import errors
from harness_cli.output import OPTIONS


@dataclass(frozen=True)
class Entry:
    """One row of the subcommand table: module under ``harness_cli.commands`` and the one-line
    help shown by ``harness --help``."""

    module: str
    help: str


# Order is the order `harness --help` lists them: the flow of one ticket, then the operator's
# tools, then the machinery.
COMMANDS: dict[str, Entry] = {
    "poll-slack": Entry(
        "poll_slack", "One Slack poll cycle: tickets, thread replies, admin commands."
    ),
    "listen": Entry("listen", "Socket Mode listener (long-running, optional)."),
    "poll-pagerduty": Entry(
        "poll_pagerduty",
        "One PagerDuty poll: incidents that name a known case surface its context.",
    ),
    "ingest-pagerduty": Entry(
        "ingest_pagerduty", "Ingest a PagerDuty webhook v3 payload (FILE or -)."
    ),
    "investigate": Entry("investigate", "Run the gated investigation loop on a case."),
    "review": Entry("review", "Adversarial review (D1-D15) and red-team review (G5) of a case."),
    "followup": Entry("followup", "Answer the operator's newest replies in a case thread."),
    "dev-agent": Entry(
        "dev_agent", "Hands-on code work in the case's worktree; push; open/update the MR."
    ),
    "mr-monitor": Entry("mr_monitor", "One cycle over monitored MRs: CI, reviewer notes, merges."),
    "consolidate": Entry("consolidate", "Consolidate transcripts into TASK.md (guarded)."),
    "session-sync": Entry(
        "session_sync", "Sync claude CLI sessions through the git session store (hooks call it)."
    ),
    "session": Entry(
        "session", "Work sessions and reservations: open, close, status, list (hooks call it)."
    ),
    "finalize": Entry(
        "finalize", "Roll an idle case's gap reports into one MR against the harness."
    ),
    "gap-patterns": Entry(
        "gap_patterns", "Cluster gap reports across cases into recurring failure modes."
    ),
    "kb-update": Entry("kb_update", "Tally failure modes per project into SOP suggestions."),
    "mcp-watch": Entry("mcp_watch", "One health cycle over the MCP servers in mcp.json."),
    "admin": Entry("admin", 'Run one admin command line, e.g. harness admin "oncall status".'),
    "case": Entry("case", "The case registry: new, list, show, register-thread, close, migrate."),
    "status": Entry("status", "Report pause state, open cases and monitored MRs."),
    "cost": Entry("cost", "What the model calls cost: per day, project, case and workflow."),
    "eval": Entry(
        "eval", "Run eval suites on the emulators: pass rates with intervals, ablations."
    ),
    "pause": Entry("pause", "Pause automatic dispatch (optionally for a DURATION)."),
    "resume": Entry("resume", "End a pause."),
    "gates": Entry("gates", "Evaluate the quality gates on a completion report."),
    "sandbox": Entry("sandbox", "Start the local Slack, GitLab and Anthropic emulators."),
    "demo": Entry("demo", "One whole ticket on the sandbox, offline."),
    "doctor": Entry("doctor", "Check config, tokens, services and the machine."),
    "init": Entry("init", "Create HARNESS_HOME, the workspace repo and a starter config."),
}

# The subcommands that write outward take --dry-run here, at the edge, all the same way
# (harness_cli.dryrun); kb-update, gap-patterns, case migrate and case accept-checks have
# their own (OWN_DRY_RUN).
DRY_RUN = frozenset(
    {
        "poll-slack",
        "poll-pagerduty",
        "ingest-pagerduty",
        "investigate",
        "review",
        "followup",
        "dev-agent",
        "mr-monitor",
        "consolidate",
        "finalize",
        "admin",
        "pause",
        "resume",
        "case",
    }
)
DRY_RUN_HELP = (
    "--dry-run: run against a throwaway copy of this machine's state, print what would be "
    "posted, pushed, opened or started, and send nothing (it stops before any model call)."
)


def _usage() -> str:
    width = max(len(name) for name in COMMANDS) + 2
    rows = "\n".join(f"  {name:<{width}}{entry.help}" for name, entry in COMMANDS.items())
    return (
        "Usage: harness [--json] [-v] COMMAND [ARGS]...\n\n"
        "harness — Slack tickets in, investigated and merged GitLab MRs out.\n\n"
        "Options (also accepted after the command):\n"
        "  --json         Machine-readable output on stdout.\n"
        "  --dry-run      Commands that write outward: print what they would send, send\n"
        "                 nothing (a copy of the state is used; no model call is made).\n"
        "  -v, --verbose  Debug logs, and tracebacks for expected errors.\n"
        "  --version      Print the version.\n"
        "  -h, --help     Show this message.\n\n"
        f"Commands:\n{rows}\n\n"
        "Run `harness COMMAND --help` for a command's options.\n"
    )


def _lift_global_options(argv: list[str]) -> list[str]:
    """Accept --json/-v anywhere before ``--`` (``harness case list --json`` is what scripts
    write), by lifting them off argv before the subcommand parses it."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg == "--json":
            OPTIONS.json = True
        elif arg in ("-v", "--verbose"):
            OPTIONS.verbose = True
        else:
            out.append(arg)
    return out


def run(argv: Sequence[str]) -> int:
    """Run one command line in-process and return its exit code (the inline dispatcher and
    tests use this; ``main`` wraps it for the console script)."""
    saved = (OPTIONS.json, OPTIONS.verbose)
    OPTIONS.reset()
    try:
        return _run(_lift_global_options(list(argv)), list(argv))
    finally:
        OPTIONS.json, OPTIONS.verbose = saved


def _run(args: list[str], argv: list[str]) -> int:
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(_usage())
        return errors.EXIT_OK if args else errors.EXIT_USAGE
    if args[0] == "--version":
        from harness_cli import __version__

        sys.stdout.write(f"harness {__version__}\n")
        return errors.EXIT_OK
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        import difflib

        close = difflib.get_close_matches(name, COMMANDS, n=1)
        sys.stderr.write(
            f"harness: no command {name!r}"
            + (f" — did you mean {close[0]!r}?" if close else "")
            + " (see `harness --help`)\n"
        )
        return errors.EXIT_USAGE
    try:
        from harness_cli import logs

        logs.setup_cli_logging(verbose=OPTIONS.verbose)
        return _run_command(name, rest)
    except errors.HarnessError as exc:
        code = _report(exc)
        _log_end(name, code, type(exc).__name__, exc.line())
        return code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - the edge: a bug becomes a crash log, not a trace
        from harness_cli import crash

        code = crash.report(exc, argv=argv, verbose=OPTIONS.verbose)
        _log_end(name, code, type(exc).__name__, f"{exc} (a bug: see the crash log)")
        return code


OWN_DRY_RUN = {"case": frozenset({"migrate", "accept-checks"})}
"""Subcommands whose own --dry-run says more than the generic one (what would move, the diff of
the checks that would be accepted)."""


def _generic_dry_run(name: str, args: list[str]) -> bool:
    head = args[: args.index("--")] if "--" in args else args
    own = OWN_DRY_RUN.get(name, frozenset())
    return name in DRY_RUN and "--dry-run" in head and not own.intersection(head)


def _run_command(name: str, args: list[str]) -> int:
    # the edge's builders (config, the doors): deferred so `harness --help` imports none of them
    from harness_cli import wiring

    wiring.install(run)
    entry = COMMANDS[name]
    if _generic_dry_run(name, args):
        args.remove("--dry-run")
        return _dry_run(name, args)
    code = _invoke(name, entry.module, args)
    if name in DRY_RUN and ("-h" in args or "--help" in args):
        sys.stdout.write(DRY_RUN_HELP + "\n")
    return code


def _dry_run(name: str, args: list[str]) -> int:
    import json

    from harness_cli import dryrun

    module = COMMANDS[name].module
    with dryrun.shadow() as plan:
        try:
            code = _invoke(name, module, args)
        except dryrun.Stopped as stop:
            plan.stopped_at, code = stop.role, errors.EXIT_OK
    if OPTIONS.json:
        body = {"dry_run": True, "would": plan.actions, "stopped_before": plan.stopped_at}
        sys.stderr.write(json.dumps(body) + "\n")
        return code
    lines = [f"  {a}" for a in plan.actions] or ["  send nothing"]
    if plan.stopped_at:
        lines.append(f"  (stopped before {plan.stopped_at}: a dry run makes no model call)")
    sys.stderr.write(
        "dry run: nothing left this machine; run for real, it would\n" + "\n".join(lines) + "\n"
    )
    return code


def _invoke(name: str, module_name: str, args: list[str]) -> int:
    module = importlib.import_module(f"harness_cli.commands.{module_name}")
    try:
        # not standalone: a usage error comes back here as an exception, to be said in one line
        # (and as JSON under --json) instead of click's boxed panel
        code = module.app(args=args, prog_name=f"harness {name}", standalone_mode=False)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return errors.EXIT_OK
        return code if isinstance(code, int) else errors.EXIT_FAILED
    except Exception as exc:
        kinds = {k.__name__ for k in type(exc).__mro__}
        if "Abort" in kinds:  # click's Ctrl-C / EOF at a prompt
            return 130
        if "ClickException" not in kinds:
            raise
        return _usage_error(name, exc)
    # A command's own return value is not an exit code: only typer.Exit's (returned as int
    # when not standalone) is.
    return code if isinstance(code, int) and not isinstance(code, bool) else errors.EXIT_OK


def _usage_error(name: str, exc: Exception) -> int:
    """click's usage error (unknown option, missing value, bad parameter) as one line: what is
    wrong and where help is; JSON on stdout under --json, like every other error."""
    ctx = getattr(exc, "ctx", None)
    where = getattr(ctx, "command_path", None) or f"harness {name}"
    message = getattr(exc, "format_message", lambda: str(exc))()
    line = f"{where}: {message} (see `{where} --help`)"
    if OPTIONS.json:
        import json

        body = {"ok": False, "error": "UsageError", "message": line}
        sys.stdout.write(json.dumps(body) + "\n")
    sys.stderr.write(f"harness: {line}\n" if not line.startswith("harness") else f"{line}\n")
    code = getattr(exc, "exit_code", errors.EXIT_USAGE)
    return code if isinstance(code, int) else errors.EXIT_USAGE


def _log_end(command: str, code: int, kind: str, line: str) -> None:
    """An error that ends a subcommand goes to the log files too (error.log for failures, bad
    input and config; agent.log for a skip or a refusal), not only to stderr — where cron's
    output may be lost. The console already has its one line."""
    import logging

    from harness_cli.logs import event

    level = logging.ERROR if code in (errors.EXIT_FAILED, errors.EXIT_USAGE) else logging.WARNING
    event(logging.getLogger("harness.cli"), "command_failed", level, command=command,
          exit_code=code, error=kind, message=line, _console=False)  # fmt: skip


def _report(exc: errors.HarnessError) -> int:
    from harness_cli.logs import redact

    if OPTIONS.verbose:
        import traceback

        sys.stderr.write(redact("".join(traceback.format_exception(exc))))
    line = redact(exc.line())
    if OPTIONS.json:
        import json

        kind = type(exc).__name__
        sys.stdout.write(json.dumps({"ok": False, "error": kind, "message": line}) + "\n")
    sys.stderr.write(f"harness: {line}\n")
    return exc.exit_code


def load_env_file() -> None:
    """A hand-run subcommand sees the tokens a scheduled one sees (#34 item 8): the non-empty
    ``KEY=value`` lines of ``$HARNESS_HOME/env`` — the file harness-cron sources and the systemd
    units read — fill in what this shell does not set; a variable set in the shell wins. A file
    that cannot be read is left to ``harness doctor`` to name."""
    import os

    from harness_cli import paths

    try:
        found = paths.read_env_file(paths.env_file())
    except (OSError, UnicodeDecodeError):
        return
    for key, value in found.items():
        if value and not os.environ.get(key):
            os.environ[key] = value


def main() -> None:
    """The console script. The env file is read here, not in ``run``: the in-process callers
    (the inline dispatcher, tests) already run inside a configured environment."""
    load_env_file()
    sys.exit(run(sys.argv[1:]))
