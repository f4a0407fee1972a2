"""The numbers of intake's flood control (harness.yaml ``intake_rate:``), apart from the code
that applies them (:mod:`harness_cli.intake.flood`) so the config can load them alone."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class IntakeRate(BaseModel):
    """harness.yaml ``intake_rate:`` — how many tickets may open cases in a window."""

    model_config = ConfigDict(extra="forbid")

    per_user: int | None = Field(5, ge=1)
    """Tickets one user may open (in all support channels) per window; the rest of the burst
    is folded into one case. ``null``: no per-user limit."""
    per_channel: int | None = Field(20, ge=1)
    """Tickets one support channel may open per window, whoever posts them (an outage
    reported by everyone at once becomes a few cases and one flood case)."""
    window_minutes: float = Field(10.0, gt=0)
    """The window both rates count in, by the messages' own Slack timestamps."""
