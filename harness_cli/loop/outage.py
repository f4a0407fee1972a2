"""A model outage is weather, not a verdict on a case (#34 item 6).

One call that meets a transient failure of the model service (429, 5xx, 529 overloaded, a
dropped connection — ``runs.unavailable`` kind ``outage``) is tried again with backoff while
the run's wall clock allows (``CaseRunner``). When the service is still down after that, the case
is not ``failed``: it *waits*, recorded in ``$HARNESS_HOME/model-outage.json``, and the next
poll-slack cycle dispatches its workflow again (every ``resume_every_seconds``) until a run gets
through. The operator hears of it once per outage — one plain-language DM when the first case
starts waiting, naming what is waiting and that nothing needs doing — never once per case and
never with the SDK's raw error; a case that joins is added to that DM in place, and each case's
tries go on in one status message of its own. The outage ends when the last waiting case runs
again, and the DM is edited once to say so (no second DM).
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from harness_cli import clock, paths
from harness_cli.config import load_config
from harness_cli.dispatch import dispatcher as dispatch
from harness_cli.dispatch.payload import Payload, Trigger
from harness_cli.errors import HarnessError, InputError
from harness_cli.logs import event
from harness_cli.loop.outage_thresholds import OutageThresholds
from harness_cli.outbox import notify
from harness_cli.state.locks import hold
from harness_cli.state.store import atomic_write_text
from harness_cli.workspace import registry

if TYPE_CHECKING:
    from harness_cli.config import Config
    from harness_cli.dispatch.backends import BackendName
    from harness_cli.outbox.outbound import Outbound

log = logging.getLogger("harness.outage")


def backoffs(t: OutageThresholds) -> list[float]:
    """The waits between retries of one call, in order, within ``retry_seconds`` in total."""
    out: list[float] = []
    wait, total = t.first_backoff_seconds, 0.0
    while total + wait <= t.retry_seconds:
        out.append(wait)
        total += wait
        wait = min(wait * 2, t.max_backoff_seconds)
    return out


_PLAIN = (
    (re.compile(r"\b529\b|overloaded", re.I), "overloaded (HTTP 529)"),
    (re.compile(r"\b429\b|rate[_ -]?limit", re.I), "rate limited (HTTP 429)"),
    (re.compile(r"\b(5\d\d)\b"), "failing with server errors (HTTP {0})"),
    (re.compile(r"connect|timed? ?out|unreachable|network", re.I), "unreachable"),
)


def plain(detail: str) -> str:
    """What the service is doing, in words: never the SDK's error dict."""
    for pattern, words in _PLAIN:
        found = pattern.search(detail)
        if found:
            return words.format(*found.groups())
    return "not answering"


class Waiting(BaseModel):
    model_config = ConfigDict(extra="forbid")
    workflow: str
    since: str
    args: dict[str, Any] = Field(default_factory=dict)
    status_ts: str = ""
    """The case's live status message of the run that met the outage: every run that tries
    the case again edits this one in place (#34 items 6, 13: before, each try posted its own
    "Waiting" message beside the outage DM — 4 messages for one outage and one case)."""


class Outage(BaseModel):
    """``$HARNESS_HOME/model-outage.json``: the outage in progress (absent: none)."""

    model_config = ConfigDict(extra="forbid")
    since: str
    why: str
    told: bool = False
    ts: str = ""
    """The outage DM (empty: not delivered yet): edited in place as cases join, and once when
    the outage is over — never a second DM for the same outage."""
    next_try: float = 0.0
    waiting: dict[str, Waiting] = Field(default_factory=dict)


def _path() -> Any:
    return paths.home() / "model-outage.json"


def current() -> Outage | None:
    try:
        return Outage.model_validate_json(_path().read_bytes())
    except FileNotFoundError:
        return None
    except ValueError:  # unreadable: start the record afresh rather than lose the next outage
        event(log, "outage_record_unreadable", logging.WARNING, path=str(_path()))
        return None


def _save(outage: Outage | None) -> None:
    if outage is None:
        _path().unlink(missing_ok=True)
    else:
        atomic_write_text(_path(), outage.model_dump_json(indent=2) + "\n")


@dataclass
class Told:
    case_id: str
    first: bool
    """This case opened the outage (its DM went out now)."""


def wait(
    cfg: Config,
    out: Outbound | None,
    *,
    case_id: str,
    workflow: str,
    detail: str,
    args: dict[str, Any] | None = None,
    status_ts: str | None = None,
) -> Told:
    """Record that ``case_id`` waits for the model; the first case of an outage tells the
    operator (one DM for the whole outage; a case that joins later is added to it in place).
    ``status_ts``: the run's status message, which the next try of the case goes on editing."""
    why = plain(detail)
    with hold("model-outage", timeout=30):
        outage = current()
        first = outage is None
        if outage is None:
            outage = Outage(since=clock.now().isoformat(), why=why)
        before = outage.waiting.get(case_id)
        joined = before is None
        outage.waiting[case_id] = Waiting(
            workflow=workflow,
            since=before.since if before else clock.now().isoformat(),
            args=args or {},
            status_ts=status_ts or (before.status_ts if before else ""),
        )
        outage.next_try = time.time() + cfg.harness.model_outage.resume_every_seconds
        _save(outage)
        event(log, "case_waits_for_model", logging.WARNING, case_id=case_id, why=why,
              first=first)  # fmt: skip
        if out is not None and not outage.told:
            outage.ts = _tell(cfg, out, outage)
            outage.told = bool(outage.ts)
            _save(outage)
        elif out is not None and joined and outage.ts:
            _edit(cfg, out, outage.ts, _waiting_text(cfg, outage))
    return Told(case_id, first)


def _waiting_text(cfg: Config, outage: Outage) -> str:
    cases = ", ".join(sorted(outage.waiting))
    every = cfg.harness.model_outage.resume_every_seconds
    verb = "wait and are" if len(outage.waiting) > 1 else "waits and is"
    return (
        f":hourglass: The model API is {outage.why}. {cases} {verb} tried again "
        f"every {max(1, round(every / 60))} min by itself; any other case that meets the "
        "outage waits too. Nothing to do — `admin: oncall status` lists what waits."
    )


def _tell(cfg: Config, out: Outbound, outage: Outage) -> str:
    """The outage DM; its ts ("" when Slack refused it for now)."""
    text = _waiting_text(cfg, outage)
    return notify.dm(out, cfg, "model_outage", text, key=f"outage-{outage.since}")


def _edit(cfg: Config, out: Outbound, ts: str, text: str) -> None:
    """Best effort: the outage DM is worth an edit, never a failed run."""
    try:
        out.update(cfg.harness.operator.self_dm_channel, ts, text)
    except HarnessError as exc:
        event(log, "outage_dm_edit_failed", logging.WARNING, ts=ts, error=exc.line())


def status_ts(case_id: str) -> str | None:
    """The status message a run of ``case_id`` goes on editing: the one of the run the outage
    left waiting (None: the case does not wait, or that run posted none)."""
    outage = current() if _path().exists() else None
    waiting = outage.waiting.get(case_id) if outage is not None else None
    return waiting.status_ts or None if waiting is not None else None


def recovered(case_id: str, cfg: Config | None = None, out: Outbound | None = None) -> None:
    """A run of ``case_id`` got through: it waits no more; the last one ends the outage, and
    the outage DM says so — edited in place, the only word of the API being back."""
    if not _path().exists():
        return
    with hold("model-outage", timeout=30):
        outage = current()
        if outage is None or case_id not in outage.waiting:
            return
        del outage.waiting[case_id]
        if outage.waiting:
            _save(outage)
            return
        event(log, "model_outage_over", since=outage.since)
        _save(None)
    if cfg is not None and out is not None and outage.ts:
        since = clock.human(datetime.fromisoformat(outage.since))
        _edit(cfg, out, outage.ts,
              f":white_check_mark: The model API is back (it was {outage.why} since {since}); "
              "the cases that waited went on by themselves. Nothing to do.")  # fmt: skip


def _settled(case_id: str) -> bool:
    try:
        return registry.load_case(case_id).status in ("closed", "merged")
    except InputError:  # no such case (any more)
        return True
    except HarnessError:  # unreadable: kept waiting; status and doctor name the file
        return False


def resume_due(backend: BackendName) -> list[str]:
    """poll-slack's part: dispatch every waiting case's workflow again once ``next_try`` has
    come (each run retries with backoff itself; a run that gets through ends its wait)."""

    outage = current()
    if outage is None or time.time() < outage.next_try:
        return []
    cfg = load_config()
    lines: list[str] = []
    with hold("model-outage", timeout=30):
        outage = current()
        if outage is None:
            return []
        outage.next_try = time.time() + cfg.harness.model_outage.resume_every_seconds
        _save(outage)
    for case_id, waiting in sorted(outage.waiting.items()):
        if _settled(case_id):  # closed or gone meanwhile: nothing waits for it any more
            recovered(case_id)
            continue
        try:
            payload = Payload(
                workflow=waiting.workflow,
                case_id=case_id,
                case_dir=str(registry.case_dir(case_id)),
                trigger=Trigger(kind="model_outage_retry"),
                args=waiting.args,
                key=f"{waiting.workflow}|{case_id}|model_outage|{json.dumps(time.time())}",
            )
            dispatch.dispatch(payload, backend=backend)
        except HarnessError as exc:
            event(log, "outage_resume_failed", logging.WARNING, case_id=case_id,
                  error=exc.line())  # fmt: skip
            continue
        lines.append(f"{waiting.workflow} {case_id} tried again (waited for the model API)")
    return lines
