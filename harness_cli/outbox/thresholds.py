"""The numbers behind the obligations (``harness.yaml``'s ``obligations:`` section)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ObligationThresholds(BaseModel):
    """How hard the harness tries to meet what it owes, and when it gives up and says so."""

    model_config = ConfigDict(extra="forbid")

    outbox_max_attempts: int = Field(30, ge=1)
    """An owed Slack or GitLab write is tried by the run that owes it and then by every later
    run of poll-slack, mr-monitor or a workflow of its case — at most this many times in all
    (about half an hour of poll-slack cycles), then given up and the operator told once, by
    another path (a top-level DM, error.log and ``harness status``)."""
    outbox_inline_wait_seconds: float = Field(10.0, ge=0)
    """A 429 whose Retry-After fits in what is left of this budget (per run) is waited out at
    once; a longer one leaves the write owed for the next run (Slack outages are minutes)."""
    outbox_keep_done_days: float = Field(14.0, gt=0)
    """A met obligation is remembered this long: a resumed run finds it instead of sending its
    write again."""
    run_max_resumes: int = Field(3, ge=0)
    """A workflow run killed mid-way is resumed (re-dispatched by poll-slack / mr-monitor, or by
    the next run of the same workflow) at most this many times; then the operator is told."""
    run_resume_grace_seconds: float = Field(30.0, ge=0)
    """A run whose process died is re-dispatched by a cycle only once it has been dead this
    long (a run that is just exiting has not written its end yet)."""
    payload_start_grace_seconds: float = Field(600.0, gt=0)
    """A dispatched payload whose run has not recorded its start this long after the payload
    was written (its process died at start-up, its unit or pipeline was lost) is dispatched
    again, once, as a resume (:mod:`harness_cli.workflows.unbegun`). Longer than a CI
    pipeline waits for a runner."""
