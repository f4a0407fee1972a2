"""The follow-up of the CI-dispatched workflow runs (``HARNESS_DISPATCH=gitlab-ci`` or
``github-actions``, :mod:`harness_cli.dispatch.ci`), from every mr-monitor cycle: a failed,
canceled or stuck job releases its work session at once instead of holding its reservations
until the heartbeat expires; queued payloads start as slots free; a stuck job is DMed once."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from harness_cli import clock
from harness_cli.config import load_config
from harness_cli.dispatch.ci import (
    ACTIVE,
    PipelinesState,
    Tracked,
    cancel,
    ci_settings,
    create,
    refresh,
    state_file,
)
from harness_cli.dispatch.payload import load_payload
from harness_cli.errors import HarnessError
from harness_cli.logs import event
from harness_cli.outbox import notify
from harness_cli.outbox.outbound import Outbound
from harness_cli.sessions import lifecycle
from harness_cli.sessions.reservations import Held, look, renew
from harness_cli.state.locks import hold

log = logging.getLogger("harness.dispatch")


def poll(client_for: Callable[[str], Any], out: Outbound, backend: str) -> list[str]:
    """One look at our pipelines (through the client ``client_for`` builds for the CI backend:
    a recording one in a dry run): release the sessions of failed or stuck jobs, start queued
    payloads as slots free. ``backend``: the configured dispatch backend. Returns what it did,
    one line each."""
    if not state_file().path.exists():
        return []
    ci, project = ci_settings()
    with state_file().update() as state:
        backend = _backend(state, backend)
        gl = client_for(backend)
        said: list[str] = []
        ended = refresh(gl, project, state)
        limit = clock.now() - timedelta(minutes=ci.stuck_minutes)
        stuck: dict[int, str] = {}
        for tracked in state.pipelines:
            if tracked.status in ACTIVE and tracked.created_at < limit:
                stuck[tracked.pipeline] = cancel(gl, project, tracked)
                tracked.status_before = tracked.status
                tracked.status, tracked.updated_at = "stuck", clock.now()
                ended.append(tracked)
        for tracked in ended:
            freed = release_pipeline(tracked.pipeline)
            said.append(
                f"pipeline {tracked.pipeline} ({tracked.workflow} {tracked.case_id}) "
                f"{tracked.status}: released {freed} session(s)"
            )
            if tracked.pipeline in stuck:  # once: a stuck pipeline is never active again
                _tell_stuck(out, tracked, stuck[tracked.pipeline], freed, ci.stuck_minutes)
        while state.queued and sum(t.status in ACTIVE for t in state.pipelines) < ci.max_concurrent:
            queued = Path(state.queued.pop(0))

            tracked = create(gl, project, ci.ref, load_payload(queued), queued)
            tracked.backend = backend
            state.pipelines.append(tracked)
            said.append(f"pipeline {tracked.pipeline} started for queued {queued.name}")
    return said


def _backend(state: PipelinesState, chosen: str) -> str:
    """The CI backend in use: the configured one when it is a CI backend, else the one the
    tracked pipelines ran on (a machine switched to local dispatch still follows them)."""
    if chosen in ("gitlab-ci", "github-actions"):
        return chosen
    return state.pipelines[-1].backend if state.pipelines else "gitlab-ci"


def _tell_stuck(out: Outbound, tracked: Tracked, outcome: str, freed: int, minutes: float) -> None:
    """The operator's one DM about a stuck job (owed through the outbox if Slack refuses)."""
    text = (
        f"the {tracked.workflow} job (pipeline {tracked.pipeline}"
        f"{' ' + tracked.web_url if tracked.web_url else ''}) was still {tracked.status_before}"
        f" after {minutes:g} min: {outcome}, {freed} session(s) released. Nothing it did after "
        f"its last push is kept; run `harness {tracked.workflow} {tracked.case_id}` again "
        "when ready."
    )
    try:
        cfg = load_config()
        notify.dm(out, cfg, "pipeline_stuck", text,
                  case_id=tracked.case_id, key=f"pipeline-{tracked.pipeline}")  # fmt: skip
    except HarnessError as exc:  # the log and mr-monitor's output still say it
        event(log, "pipeline_stuck_not_told", logging.WARNING, pipeline=tracked.pipeline,
              error=exc.line())  # fmt: skip


def release_pipeline(pipeline: int) -> int:
    """Give back every reservation held by the sessions of ``pipeline`` (its job is gone)."""
    attempts = load_config().harness.sessions.cas_attempts
    freed = 0
    with hold("sessions-board", timeout=60, what="the reservation board"):
        board = lifecycle.open_board()
        snap = look(board, clock.now(), lifecycle.machine_id())
        for h in [*snap.live, *snap.stale]:  # a stuck job's hold may have expired meanwhile
            if h.pipeline == str(pipeline):
                renew(
                    board,
                    Held(h),
                    now=clock.now(),
                    machine=lifecycle.machine_id(),
                    attempts=attempts,
                    release=True,
                )
                freed += 1
    event(log, "pipeline_sessions_released", pipeline=pipeline, sessions=freed)
    return freed
