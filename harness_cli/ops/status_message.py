"""The live status message: one placeholder per run in the case thread, edited in place.

Reference, Layer 5: "While an agent runs, a placeholder message in the case thread cycles
through statuses (Reading TASK.md, then Searching codebase, then Drafting patch) and finally
resolves to Done or Failed: <reason>. This streaming reporter edits one message in place, so
threads don't fill up with noise."

The runtime's live events drive it (``RunRequest.on_event``, through ``loop/run_status.py``,
which says which event moves it to which status). A run makes hundreds of tool calls; Slack
answers 429 to more than about one write per second per channel. So an edit goes out only
when the status changed AND at least MIN_EDIT_INTERVAL_S passed since the last one;
statuses in between are skipped (the next edit shows the newest). The final Done/Failed edit
always goes out. A status message never fails a run: Slack errors are logged and the
reporter goes quiet.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from harness_cli.config import Config
from harness_cli.cost.meter import current, spend_line
from harness_cli.errors import HarnessError
from harness_cli.logs import event
from harness_cli.loop import outage
from harness_cli.loop.run_status import status_for
from harness_cli.outbox.notify import case_thread
from harness_cli.outbox.outbound import Outbound
from harness_cli.outbox.slack_door import Owed
from harness_cli.services.runtime import RunEvent
from harness_cli.services.slack import RateLimited

log = logging.getLogger("harness.status")

MIN_EDIT_INTERVAL_S = 5.0
"""At most one chat.update per this many seconds, and only on a status change."""
FINAL_RETRY_CAP_S = 10.0
"""The closing edit waits out one 429 of at most this long, then gives up (logged)."""


class StatusReporter:
    """One placeholder, edited in place. ``start`` may be called once per model call of a
    workflow (it names the phase); ``done``/``failed`` close the message for good."""

    def __init__(
        self,
        out: Outbound,
        channel: str,
        thread_ts: str | None,
        *,
        title: str,
        min_interval_s: float = MIN_EDIT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.out, self.channel, self.thread_ts = out, channel, thread_ts
        self.title = title
        self.min_interval_s = min_interval_s
        self.clock, self.sleep = clock, sleep
        self.ts: str | None = None
        self.phase = ""
        self.status = "Starting"
        self.shown = ""
        self.last_edit = float("-inf")
        self.blocked_until = float("-inf")
        self.closed = False
        self.quiet = False
        self.tokens = 0
        self.edits = 0
        self._lock = threading.Lock()

    # -- the RunStatus protocol ----------------------------------------------------------------
    def start(self, phase: str = "") -> None:
        with self._lock:
            if self.closed or self.quiet:
                return
            self.phase, self.status = phase, "Starting"
            if self.ts is None:
                self._post()
            else:
                self._edit(force=False)

    def event(self, ev: RunEvent) -> None:
        with self._lock:
            if ev.kind == "usage":
                self.tokens += sum(int(v) for v in ev.data.values() if isinstance(v, int))
            status = status_for(ev)
            if status is None or self.closed or self.quiet:
                return
            self.status = status
            self._edit(force=False)

    def done(self, summary: str = "", *, limit: int = 200) -> None:
        """``limit``: a workflow whose closing line is its one outcome message (the dev-agent's
        MR link, what failed, what changed) allows it more than the default 200 characters."""
        summary = summary.strip()
        summary = " ".join(summary.split()) if limit <= 200 else summary
        summary = summary[:limit]
        self._close(":white_check_mark:", "Done" + (f" — {summary}" if summary else ""))

    def handover(self) -> str | None:
        """#34 item 13: end the live status without a closing line of its own and return its
        message (None: no placeholder reached Slack), for the run's one outcome post to be
        written over it — an investigation ended in two messages with the cost line twice."""
        with self._lock:
            self.closed = True
            return None if self.quiet else self.ts

    def failed(self, reason: str, *, limit: int = 300) -> None:
        """``limit``: as for :meth:`done` — the way out at the end of a dev-agent's outcome
        must not be cut off (#34 item 2)."""
        self._close(":x:", f"Failed: {' '.join(reason.split())[:limit]}")

    def waiting(self, reason: str) -> None:
        """Not failed: the run stopped on something outside it and is tried again by itself."""
        self._close(":double_vertical_bar:", f"Waiting: {' '.join(reason.split())[:300]}")

    # -- plumbing ----------------------------------------------------------------------------
    def render(self, icon: str = ":hourglass_flowing_sand:", status: str | None = None) -> str:
        phase = f" ({self.phase})" if self.phase else ""
        return f"{icon} {self.title}{phase}: {status or self.status}"

    def _post(self) -> None:
        text = self.render()
        try:
            # Best effort: a placeholder delivered late would be noise. A resumed run opens the
            # same scope, gets this post's ts back and edits its predecessor's placeholder.
            self.ts = self.out.post(
                self.channel, text, thread_ts=self.thread_ts, purpose="status", owed=False
            )
        except HarnessError as exc:
            self._go_quiet("post", exc)
            return
        self.shown, self.last_edit = text, self.clock()

    def _edit(self, *, force: bool, text: str | None = None, owed: bool = False) -> bool:
        text = text or self.render()
        if self.ts is None or text == self.shown:
            return True
        now = self.clock()
        if not force and (now - self.last_edit < self.min_interval_s or now < self.blocked_until):
            return False
        try:
            self.out.update(self.channel, self.ts, text, owed=owed, purpose="status_final")
        except Owed as exc:  # the closing line is owed: a later run makes the edit
            event(log, "status_final_edit_owed", logging.WARNING, ts=self.ts, error=exc.line())
            return True
        except RateLimited as exc:
            self.blocked_until = now + exc.retry_after
            if not force or exc.retry_after > FINAL_RETRY_CAP_S:
                return False
            self.sleep(exc.retry_after)
            return self._edit(force=True, text=text)
        except HarnessError as exc:
            self._go_quiet("update", exc)
            return False
        self.shown, self.last_edit = text, now
        self.edits += 1
        return True

    def _close(self, icon: str, status: str) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
            self.phase = ""
            cost = _cost_line()
            tokens = f" ({self.tokens:,} tokens)" if self.tokens and not cost else ""
            text = self.render(icon, status + tokens) + (f"\n{cost}" if cost else "")
            if self.ts is None:
                self._post_final(text)
            elif not self._edit(force=True, text=text, owed=True):
                event(log, "status_final_edit_lost", logging.WARNING, ts=self.ts, text=text)

    def _post_final(self, text: str) -> None:
        """No placeholder made it to Slack: the closing line is a post of its own, owed (the
        dev-agent's one outcome message is this line)."""
        try:
            self.ts = self.out.post(
                self.channel, text, thread_ts=self.thread_ts, purpose="status_final"
            )
        except Owed as exc:
            event(log, "status_final_post_owed", logging.WARNING, error=exc.line())
        except HarnessError as exc:
            self._go_quiet("post", exc)

    def _go_quiet(self, action: str, exc: HarnessError) -> None:
        self.quiet = True
        event(log, "status_message_off", logging.WARNING, action=action, error=exc.line())


def _cost_line() -> str:
    """The closing edit ends the run: it states what the run spent and the case so far, from
    the cost meter (#18); empty when nothing was metered."""

    case = current().get("case")
    return spend_line(str(case) if case else None)


def for_case(cfg: Config, out: Outbound, case_id: str, title: str) -> StatusReporter | None:
    """A reporter in the case's thread in the self-DM; None when the case has no thread (a
    top-level placeholder would be exactly the noise the thread exists to avoid)."""

    thread = case_thread(case_id)
    if thread is None or thread.channel != cfg.harness.operator.self_dm_channel:
        return None
    reporter = StatusReporter(out, thread.channel, thread.thread_ts, title=title)
    # a case a model outage left waiting: this run goes on in the waiting run's message,
    # edited in place, rather than one more message per try (#34 items 6, 13)
    reporter.ts = outage.status_ts(case_id)
    return reporter


def reason(exc: BaseException) -> str:
    """A one-line failure reason for the closing edit."""
    if isinstance(exc, HarnessError):
        return exc.message
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    return f"{type(exc).__name__}: {exc}"
