"""``ci_dispatch:`` of harness.yaml, alone: config reads it without importing the backend that
applies it (``dispatch/ci.py``), which reads config back (#29: the cycle through config)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CiDispatchSettings(BaseModel):
    """``ci_dispatch:`` in harness.yaml."""

    model_config = ConfigDict(extra="forbid")
    project: str = ""
    """The harness's own project whose CI runs the workflows ("": improvement.self_repo)."""
    ref: str = "main"
    max_concurrent: int = Field(4, ge=1)
    """Our pipelines running at once; more wait in pipelines.json."""
    stuck_minutes: float = Field(120.0, gt=0)
    """A pipeline still pending or running after this long is canceled and its session freed."""
    workflow: str = "harness-job.yml"
    """github-actions: the workflow file (in ``.github/workflows/``) that is dispatched."""
