"""``sessions:`` in harness.yaml — the coordination policy, read in one place.

Reference 004: "La coordination est optionnelle… l'exécution ouvre sa session de travail en
exclusivité, et le verdict du gate décide de la suite." Exclusivity is asked for per workflow,
not imposed: a workflow absent from ``workflows`` opens no session at all.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class WorkflowPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")
    exclusive: bool = True
    """004 "Respecter le travail des autres agents": the session is opened in exclusivity, so
    any other live session on the same elements makes the gate deny."""
    on_overlap: Literal["warn", "allow"] = "warn"
    """Two non-exclusive sessions on the same elements: ``warn`` → the run waits as
    ``waiting_for_approval`` (one DM); ``allow`` → it starts beside the other."""


def _default_workflows() -> dict[str, WorkflowPolicy]:
    return {
        "investigate": WorkflowPolicy(),
        "dev-agent": WorkflowPolicy(on_overlap="allow"),
        "consolidate": WorkflowPolicy(),
        "finalize": WorkflowPolicy(on_overlap="allow"),
        "claude-code": WorkflowPolicy(),
    }


class SessionsPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")
    heartbeat_seconds: float = Field(60.0, gt=0)
    """004 "Les heartbeats du worker détectent les exécutions mortes": a running session
    renews its reservations this often."""
    session_expiry_seconds: float = Field(300.0, gt=0)
    """A session whose last heartbeat is older than this is stale: the next runner that looks
    removes it (a dead holder on the same machine is removed at once)."""
    human_expiry_hours: float = Field(8.0, gt=0)
    """A human's Claude Code session has no heartbeat thread: its hooks renew it on every
    gate question; past this it is stale."""
    approval_ttl_hours: float = Field(24.0, gt=0)
    """004 "Une exécution que personne n'approuve sous 24 heures est annulée"."""
    cas_attempts: int = Field(8, ge=1)
    """Compare-and-swap retries when another runner moved a reservation ref meanwhile."""
    workflows: dict[str, WorkflowPolicy] = Field(default_factory=_default_workflows)
    """Which workflows open a session, and how (``claude-code``: a human's session)."""

    def for_workflow(self, workflow: str) -> WorkflowPolicy | None:
        return self.workflows.get(workflow)
