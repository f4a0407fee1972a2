"""The admin command language of the self-DM (reference, Layer 6), parsed in one place for both
Slack (``admin: …`` from the operator) and ``harness admin "TEXT"``.

Pure: text in, a typed command out, or ``AdminUsage`` with the reply to send. Never raises
anything else, whatever the text.
"""

from __future__ import annotations

import re
import shlex
import unicodedata
from dataclasses import dataclass, field
from datetime import timedelta

PREFIX = re.compile(r"^\s*admin\s*:\s*", re.IGNORECASE)

USAGE = """\
admin commands (send them in your self-DM, prefixed with "admin:"):
  task <jira> [--auto]              analyze, implement and open the MR for a Jira ticket
  oncall-run <slack-url>            investigate the ticket in that Slack thread
  oncall-toggle [project]           turn auto-monitoring of new tickets on/off
  mr rescan|pause|resume <mr>       poll one MR again / mute or unmute its auto-replies
  oncall pause [duration]           mute automatic dispatch (e.g. 30m, 2h, 1d); none = until resume
  oncall resume | oncall status     end the pause / report what is paused and held back
  finalize <case>                   roll up gap reports into the improvement MR now
  register-thread <slack-url> <case>  link a Slack thread to a case
  close-case <case>                 mark a case finished
  budget <case> <amount>            raise (or set) the case's spending limit in $ (e.g. 25)
  reopen <case>                     put a failed/stuck/closed case back for approval
  retry <case>                      run the dev-agent again on a case whose run failed
  repair <case>                     restore the case's case.json from its last committed
                                    version that reads (when it is unreadable)
  accept-checks <case>              accept the change to the required checks (MR leaves draft)
  gap-patterns                      cluster gap reports across cases now
  approve <run>                     check a run waiting for approval again and start it
  run <case> <n> [--confirm]        run action n of the case's TASK.md (a draft); destructive
                                    actions and production writes need --confirm
  help                              this message"""


class AdminUsage(Exception):
    """Malformed or unknown command: ``reply`` is what the operator gets back."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.reply = f"{problem}\n\n{USAGE}"


@dataclass(frozen=True)
class AdminCommand:
    verb: str
    """task, oncall-run, oncall-toggle, mr-rescan, mr-pause, mr-resume, oncall-pause,
    oncall-resume, oncall-status, finalize, register-thread, close-case, reopen, retry,
    repair, accept-checks, budget, gap-patterns, approve, run, help."""
    args: tuple[str, ...] = ()
    flags: frozenset[str] = field(default_factory=frozenset)
    duration: timedelta | None = None


def is_admin_text(text: str) -> bool:
    return bool(PREFIX.match(text or ""))


def strip_prefix(text: str) -> str:
    return PREFIX.sub("", text or "", count=1).strip()


_DURATION = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def parse_duration(text: str) -> timedelta:
    """``30m``, ``2h``, ``1d``, ``1h30m``, ``90s``, or a bare number of minutes."""
    value = text.strip().lower()
    if value.isdigit():
        return timedelta(minutes=int(value))
    match = _DURATION.match(value)
    if not value or not match or not any(match.groups()):
        raise AdminUsage(f"{text!r} is not a duration (try 30m, 2h or 1d)")
    days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    span = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    if span <= timedelta(0):
        raise AdminUsage("a pause must last longer than zero")
    return span


_ARITY: dict[str, tuple[int, str]] = {  # -1: zero or one argument
    "task": (1, "task <jira> [--auto]"),
    "oncall-run": (1, "oncall-run <slack-url>"),
    "oncall-toggle": (-1, "oncall-toggle [project]"),
    "finalize": (1, "finalize <case>"),
    "register-thread": (2, "register-thread <slack-url> <case>"),
    "close-case": (1, "close-case <case>"),
    "budget": (2, "budget <case> <amount>"),
    "reopen": (1, "reopen <case>"),
    "retry": (1, "retry <case>"),
    "repair": (1, "repair <case>"),
    "accept-checks": (1, "accept-checks <case>"),
    "gap-patterns": (0, "gap-patterns"),
    "approve": (1, "approve <run>"),
    "run": (2, "run <case> <n> [--confirm]"),
    "help": (0, "help"),
}


def _visible(text: str) -> str:
    """Without the invisible format characters (zero-width spaces, U+2063 …) that a copy from
    Slack or a phone keyboard leaves in a line: they must not change what a command means."""
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def parse_admin(text: str) -> AdminCommand:
    """Parse one admin line (with or without the ``admin:`` prefix)."""
    text = _visible(text or "")
    body = strip_prefix(text) if is_admin_text(text) else text.strip()
    try:
        words = shlex.split(body)
    except ValueError as exc:
        raise AdminUsage(f"could not read {body!r}: {exc}") from None
    if not words:
        raise AdminUsage("empty admin command")
    head, rest = words[0].lower(), words[1:]
    flags = frozenset(w for w in rest if w.startswith("--"))
    args = tuple(_unwrap(w) for w in rest if not w.startswith("--"))
    if head in ("oncall", "mr"):
        return _two_word(head, args, flags)
    if head not in _ARITY:
        raise AdminUsage(f"unknown admin command {head!r}")
    arity, usage = _ARITY[head]
    if len(args) != arity and not (arity == -1 and len(args) <= 1):
        raise AdminUsage(f"usage: {usage}")
    if head == "budget":
        parse_amount(args[1])
    allowed = {"task": {"--auto"}, "run": {"--confirm"}}.get(head, set())
    if head == "run" and not args[1].isdigit():
        raise AdminUsage(f"usage: {usage} (n is the action's number in TASK.md)")
    if flags - allowed:
        raise AdminUsage(f"unknown option {sorted(flags - allowed)[0]} for {head}")
    return AdminCommand(head, args, flags)


def _two_word(head: str, args: tuple[str, ...], flags: frozenset[str]) -> AdminCommand:
    if flags:
        raise AdminUsage(f"unknown option {sorted(flags)[0]} for {head}")
    if not args:
        raise AdminUsage(
            f"usage: {head} "
            + (
                "pause [duration] | resume | status"
                if head == "oncall"
                else "rescan|pause|resume <mr>"
            )
        )
    sub, more = args[0].lower(), args[1:]
    if head == "oncall":
        if sub == "pause" and len(more) <= 1:
            return AdminCommand(
                "oncall-pause", (), duration=parse_duration(more[0]) if more else None
            )
        if sub in ("resume", "status") and not more:
            return AdminCommand(f"oncall-{sub}")
        raise AdminUsage("usage: oncall pause [duration] | oncall resume | oncall status")
    if sub in ("rescan", "pause", "resume") and len(more) == 1:
        return AdminCommand(f"mr-{sub}", more)
    raise AdminUsage("usage: mr rescan|pause|resume <mr>")


def parse_amount(text: str) -> float:
    """A budget in dollars: ``25``, ``$25``, ``12.50``; more than zero."""
    try:
        value = float(text.strip().lstrip("$").replace(",", ""))
    except ValueError:
        raise AdminUsage(f"{text!r} is not an amount in dollars (try 25 or $12.50)") from None
    if not value > 0 or value != value or value == float("inf"):
        raise AdminUsage("a budget must be a positive amount of dollars")
    return value


def _unwrap(word: str) -> str:
    """Slack wraps links as ``<https://…|label>``; keep the URL."""
    if word.startswith("<") and word.endswith(">"):
        return word[1:-1].split("|", 1)[0]
    return word
