"""The per-message lifecycle: what makes intake lose nothing and repeat nothing, whatever kills
it and wherever (issue #13; reference Layer 1: poller and Socket Mode share one dedup file).

Every message poll-slack or listen reads goes through three stages in ``socket-dedup``:

1. **seen** — recorded durably, with the message itself, under a lease held by this run
   (:func:`Lifecycle.record`), *before* any effect. From here the message cannot be lost: if
   this run dies, the next cycle finds the entry (:func:`Lifecycle.recover`) and takes the lease
   over — at once when the holder's process is gone, after ``intake_lease_seconds`` when it is
   alive but hung. A failure gives the lease back with the error (retried next cycle; parked
   and told to the operator after ``intake_max_attempts``).
2. **handled** — every effect exists. Each effect is idempotent by its own key, so redoing a
   message after a crash finds what exists and adds only what is missing: the case by
   ``case_id`` (``registry.open_case``), its thread-map entries by (channel, ts), its case thread
   by ``case_id`` (``case_thread.ensure``: recorded in case.json, else found again among the
   harness's own posts), a dispatch by (workflow, case, channel, trigger ts) (the payload key:
   the dispatcher and the held-work queue refuse a second one), an admin command by its answer
   in Slack.
3. **done** — written only after the workspace commit that holds the new cases
   (:func:`Lifecycle.close`); a failed commit gives the leases back as *handled*, so the retry
   only commits.

The invariant, checked by tests/intake/test_crash_injection.py and bench/bench_crash.py: for
every message visible to Slack, after any crash pattern and one clean cycle, exactly one case,
one case thread and one dispatch exist, committed. Done keys are kept as long as a cursor or a
live thread can read their message again (:func:`floors`), so no TTL re-opens a message.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Literal

from harness_cli.errors import HarnessError, StateError
from harness_cli.faults import crash_point
from harness_cli.intake import messages, threads
from harness_cli.intake.context import BudgetExhausted, Intake
from harness_cli.logs import event
from harness_cli.outbox import scope
from harness_cli.services.slack import Message
from harness_cli.state import dedup, files
from harness_cli.state.models import InFlight, ThreadEntry
from harness_cli.workspace import registry

log = logging.getLogger("harness.intake")

Kind = Literal["top", "reply"]


class Lifecycle:
    """One run's side of the ledger: what it holds, what it finished, what is left to commit."""

    def __init__(self, ctx: Intake, *, label: str = "intake") -> None:
        self.ctx = ctx
        self.label = label
        self.t = ctx.cfg.harness.thresholds
        self.snapshot = dedup.read()  # one read: a no-op cycle never writes the ledger
        self.done = self.snapshot.done
        self.mine: set[str] = set()
        self.finished: list[str] = []
        self.unfinished: list[str] = []

    # -- stage 1: seen --------------------------------------------------------------------------
    def record(
        self, channel: str, found: Iterable[Message], *, kind: Kind, thread: str = ""
    ) -> list[tuple[str, InFlight]]:
        """Record what is new in ``found`` as seen, under our lease (one write, only if any)."""
        # Oldest first (Slack lists newest first): tickets open, and dispatch, in their order.
        offered = sorted(
            (
                dedup.Incoming(dedup.message_key(channel, str(m["ts"])), kind, thread, dict(m))
                for m in found
                if "ts" in m
            ),
            key=lambda o: dedup.split_key(o.key)[1],
        )
        lease = self.t.intake_lease_seconds
        inflight, parked = self.snapshot.inflight, self.snapshot.parked
        offered = [
            o
            for o in offered
            if o.key not in self.done
            and o.key not in self.mine
            and o.key not in parked
            and (o.key not in inflight or dedup.may_take(inflight[o.key], lease))
        ]
        if not offered:
            return []  # nothing new: the ledger is not even opened for writing
        held = dedup.record(offered, lease_seconds=self.t.intake_lease_seconds)
        if held:
            crash_point("intake.claimed")
        return held

    def recover(self) -> None:
        """Finish what a killed, hung or failed run left in flight, oldest first."""
        held = dedup.take_over(lease_seconds=self.t.intake_lease_seconds, snapshot=self.snapshot)
        if held:
            crash_point("intake.claimed")
            self.ctx.tally.recovered += [key for key, _ in held]
            event(log, "intake_takeover", keys=[key for key, _ in held][:50], count=len(held))
        self.run(held)

    # -- stage 2: handled -----------------------------------------------------------------------
    def run(self, held: list[tuple[str, InFlight]]) -> None:
        for index, (key, entry) in enumerate(held):
            self.mine.add(key)
            try:
                if entry.stage != "handled":
                    self.ctx.redelivery = entry.leases > 1 or entry.attempts > 0
                    # Whatever it posts is owed by the message: a redelivery finds its posts.
                    with scope.opened(f"intake:{key}", retried_by="intake"):
                        self._handle(key, entry)
                crash_point("intake.handled")
                self.finished.append(key)
            except BudgetExhausted:
                self.unfinished += [k for k, _ in held[index:]]
                raise
            except StateError as exc:
                self._waits_for_repair(key, entry, exc)
            except Exception as exc:  # noqa: BLE001 - one bad message must not stop the cycle
                self._failed(key, exc)
            finally:
                self.ctx.redelivery = False

    def _handle(self, key: str, entry: InFlight) -> None:
        channel, _, _ = key.rpartition("/")
        message = entry.message
        if entry.kind == "top":
            messages.top_level(self.ctx, channel, message)
            return
        thread = find_thread(entry.thread)
        if thread is None or thread.closed:
            self.ctx.tally.ignored.append(f"{key}: its thread is no longer tracked")
            return
        messages.reply(self.ctx, thread, message)

    def _waits_for_repair(self, key: str, entry: InFlight, exc: StateError) -> None:
        """#34 item 4: a reply whose case file is unreadable. Before, its followup failed in a
        detached process, posted nothing and was never tried again. Now it stays in flight
        with no attempt counted (never parked: it is the file that is broken, not the
        message), the operator is told once per error with the fix, and the first cycle after
        the repair handles it."""
        line = exc.line()
        self.ctx.tally.errors.append(f"{key}: {line}")
        event(log, "message_waits_for_repair", logging.WARNING, key=key, error=line)
        dedup.release([key], error=line, counted=False)
        if entry.error == line[:300]:
            return  # said already
        channel, _, ts = key.rpartition("/")
        text = (
            f"I could not act on your message {channel}/{ts}: {line}. It is kept: I will "
            "handle it in the first cycle after the file reads again."
        )
        try:
            self.ctx.out.post(self.ctx.self_dm, text)
        except HarnessError as told:
            event(log, "repair_notice_failed", logging.WARNING, key=key, error=told.line())

    def _failed(self, key: str, exc: Exception) -> None:
        line = exc.line() if isinstance(exc, HarnessError) else f"{type(exc).__name__}: {exc}"
        self.ctx.tally.errors.append(f"{key}: {line}")
        event(log, "message_failed", logging.ERROR, key=key, error=repr(exc))
        parked = dedup.release([key], error=line, max_attempts=self.t.intake_max_attempts)
        for parked_key, entry in parked:
            self.ctx.tally.parked.append(parked_key)
            _tell_parked(self.ctx, parked_key, entry)

    # -- stage 3: done --------------------------------------------------------------------------
    def close(self) -> None:
        """Commit the workspace, then record the finished messages as done; give back the
        leases of what is left (the next cycle takes them at once)."""
        dedup.release(self.unfinished)
        if not self.finished:
            return

        try:
            count = len(self.ctx.tally.new_cases)
            registry.sync(f"{self.label}: {count} new case(s)", self.t)
        except HarnessError as exc:
            # Every effect exists; only the commit is missing. Handled, not done.
            dedup.release(self.finished, stage="handled")
            self.ctx.tally.errors.append(f"workspace commit: {exc.line()}")
            event(log, "intake_commit_failed", logging.ERROR, error=exc.line())
            return
        crash_point("intake.done")
        dedup.finish(
            self.finished,
            floors=floors(self.ctx),
            ttl_hours=self.t.dedup_ttl_hours,
            max_entries=self.t.dedup_max_entries,
        )
        self.finished = []


def find_thread(key: str) -> ThreadEntry | None:
    """A thread by its map key: a case's (either map) or an admin command's."""
    for handle in (files.oncall_thread_map(), files.task_thread_map()):
        entry = handle.read().threads.get(key)
        if entry is not None:
            return entry
    return files.slack_cursors().read().admin_threads.get(key)


def floors(ctx: Intake) -> dict[str, float]:
    """Per channel, the oldest ts any reader may still read: the channel's cursor, and each live
    thread's read window. A done key above its channel's floor must stay (the frozen cursor of a
    quiet channel re-reads its newest message for days)."""

    cursors = files.slack_cursors().read()
    out: dict[str, float] = {}
    for channel in [ctx.self_dm, *ctx.support_channels()]:
        cursor = cursors.channels.get(channel)
        out[channel] = float(cursor.oldest) if cursor else 0.0
    for entry in threads.live_threads(ctx):
        start = float(threads.read_start(ctx, entry))
        out[entry.channel] = min(out.get(entry.channel, start), start)
    return out


def _tell_parked(ctx: Intake, key: str, entry: InFlight) -> None:
    text = (
        f"I gave up on Slack message {key} after {entry.attempts} failed attempts: "
        f"{entry.error}\nIt is parked, not lost: `harness poll-slack --retry-parked` tries "
        "again once the cause is fixed."
    )
    try:
        ctx.out.post(ctx.self_dm, text)
    except HarnessError as exc:
        event(log, "parked_dm_failed", logging.ERROR, key=key, error=exc.line())
