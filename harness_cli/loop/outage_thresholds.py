"""harness.yaml ``model_outage:`` (read by :mod:`harness_cli.loop.outage`); a module of its own so
the config can import it without the outage machinery."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class OutageThresholds(BaseModel):
    """harness.yaml ``model_outage:``: how long a call waits out a model outage, and how often
    the waiting cases are tried again. Each rule reads its number here and nowhere else."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    retry_seconds: float = Field(180.0, ge=0)
    """How long one model call keeps retrying a transient failure (never past the run's wall
    clock): a blip of a few 529s costs a minute, not a case."""
    first_backoff_seconds: float = Field(5.0, gt=0)
    """The first wait between retries; each next one doubles, up to ``max_backoff_seconds``."""
    max_backoff_seconds: float = Field(60.0, gt=0)
    resume_every_seconds: float = Field(300.0, ge=0)
    """How often poll-slack dispatches the waiting cases again while the outage lasts."""
