"""The error types of the harness. Each maps to one exit code of CONTRACT §1 at the CLI edge;
each message says what happened, where, and what to do next — in one line."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_LOCKED = 3
EXIT_REFUSED = 4


class HarnessError(Exception):
    """An expected failure: rendered as one line, never as a traceback (unless -v)."""

    exit_code = EXIT_FAILED

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def line(self) -> str:
        return f"{self.message} — {self.hint}" if self.hint else self.message


class ConfigError(HarnessError):
    """Bad config, bad usage or bad input: names the file/field/value and the fix."""

    exit_code = EXIT_USAGE


class InputError(ConfigError):
    """Bad input on the command line or in a payload/report file."""


class ServiceError(HarnessError):
    """An outside service (Slack, GitLab, the model, git) failed after its retries."""

    status: int | None = None
    """The HTTP status behind it, when there was one (404: gone; 429: rate limited)."""
    code: str = ""
    """The service's own error name, when it gave one (Slack's ``not_in_channel`` …)."""


class StateError(HarnessError):
    """A state or case file is unreadable (truncated, binary, wrong types, from a newer harness).
    Bad state is bad input (CONTRACT §1: exit 2, one line naming the file and the fix); the
    file is moved aside or left in place, never silently reset."""

    exit_code = EXIT_USAGE


class StateConflict(HarnessError):
    """The state on disk does not allow what was asked (e.g. an illegal status transition)."""


class LockHeld(HarnessError):
    """Another run holds the lock for the same unit of work."""

    exit_code = EXIT_LOCKED


class PolicyRefused(HarnessError):
    """Refused by policy: paused, outside the allowlist, over a budget, reservation held."""

    exit_code = EXIT_REFUSED
