"""``HARNESS_DISPATCH=gitlab-ci``: each workflow runs as a pipeline of the harness's own
GitLab project (ARCHITECTURE.md "Scale"; issue #19 point 7). ``HARNESS_DISPATCH=github-actions``
is its sibling for a team on GitHub: a ``workflow_dispatch`` of the shipped
``cron/github-actions/harness-job.yml`` in the harness's own GitHub repository, its run followed
the same way (a run is a "pipeline" here: ``CI_PIPELINE_ID`` is the run id).

``project.pipelines.create({"ref": …, "variables": [HARNESS_PAYLOAD, HARNESS_WORKFLOW,
HARNESS_CASE]})`` starts the job of ``cron/gitlab-ci/harness-job.yml`` (which clones the
workspace and runs ``harness <workflow> --payload …``); the workflow's work session records
the pipeline id (``CI_PIPELINE_ID``). At most ``max_concurrent`` of our pipelines run at once,
the rest wait in ``$HARNESS_HOME/pipelines.json`` and start as slots free.
:func:`harness_cli.workflows.ci_follow.poll` (from every mr-monitor cycle) follows them: a
failed, canceled or stuck job releases its session at once instead of holding its reservations
until the heartbeat expires.
"""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness_cli import clock, paths
from harness_cli.config import load_config
from harness_cli.dispatch.settings import CiDispatchSettings
from harness_cli.errors import HarnessError, ServiceError
from harness_cli.logs import event
from harness_cli.services.github import GitHubSettings, LiveGitHub
from harness_cli.state.store import JsonFile

log = logging.getLogger("harness.dispatch")
ACTIVE = ("created", "waiting_for_resource", "preparing", "pending", "running", "scheduled")
ENDED_BADLY = ("failed", "canceled", "skipped")


class Tracked(BaseModel):
    model_config = ConfigDict(extra="allow")
    pipeline: int
    workflow: str
    case_id: str
    payload: str
    status: str = "pending"
    web_url: str = ""
    created_at: datetime
    updated_at: datetime
    status_before: str = ""
    """What it still was when found stuck (``pending`` / ``running``)."""
    backend: str = "gitlab-ci"
    """Which CI runs it: ``gitlab-ci`` (a pipeline) or ``github-actions`` (a workflow run)."""


class PipelinesState(BaseModel):
    """``$HARNESS_HOME/pipelines.json``."""

    model_config = ConfigDict(extra="allow")
    schema_version: int = 1
    pipelines: list[Tracked] = Field(default_factory=list)
    queued: list[str] = Field(default_factory=list)
    """Payload files waiting for a free slot, oldest first."""


def state_file() -> JsonFile[PipelinesState]:
    return JsonFile(paths.state_file("pipelines.json"), PipelinesState)


_RUN_STATUS = {"queued": "pending", "waiting": "pending", "requested": "pending",
               "pending": "pending", "in_progress": "running"}  # fmt: skip
_RUN_END = {"success": "success", "cancelled": "canceled", "skipped": "skipped"}


class ActionsRuns:
    """GitHub Actions workflow runs in the words this module keeps for GitLab pipelines
    (``id``, ``status``, ``web_url``), so both backends share the queue, the stuck detection
    and the release of sessions."""

    def __init__(self) -> None:
        self.gh = LiveGitHub(GitHubSettings.from_env())
        self.workflow = ci_settings()[0].workflow

    def create_pipeline(self, project: str, ref: str, variables: dict[str, str]) -> dict[str, Any]:
        inputs = {
            "payload": variables["HARNESS_PAYLOAD"],
            "workflow": variables["HARNESS_WORKFLOW"],
            "case": variables["HARNESS_CASE"],
        }
        found = self.gh.dispatch_workflow(project, self.workflow, ref, inputs)
        run_id = found.get("workflow_run_id")
        if not run_id:
            raise ServiceError(
                f"GitHub started {self.workflow} on {project} but named no run",
                hint="GitHub Enterprise before 3.19 has no return_run_details: upgrade, or use "
                "local/systemd dispatch",
            )
        return {"id": int(run_id), "status": "pending", "web_url": found.get("html_url", "")}

    def get_pipeline(self, project: str, pipeline_id: int) -> dict[str, Any]:
        run = self.gh.get_run(project, pipeline_id)
        status = str(run.get("status") or "")
        if status == "completed":
            mapped = _RUN_END.get(str(run.get("conclusion") or ""), "failed")
        else:
            mapped = _RUN_STATUS.get(status, "running")
        return {"id": pipeline_id, "status": mapped, "web_url": run.get("html_url", "")}

    def cancel_pipeline(self, project: str, pipeline_id: int) -> None:
        self.gh.cancel_run(project, pipeline_id)


def ci_settings() -> tuple[CiDispatchSettings, str]:
    cfg = load_config().harness
    return cfg.ci_dispatch, cfg.ci_dispatch.project or cfg.improvement.self_repo


def start(
    payload: Any, payload_file: Path, gl: Any, backend: str = "gitlab-ci"
) -> tuple[bool, str]:
    """Start the payload's pipeline, or queue it when ``max_concurrent`` are running. ``gl``: the
    CI client the edge built (:func:`harness_cli.wiring.ci_client`; a recording one in a dry
    run)."""
    settings, project = ci_settings()
    with state_file().update() as state:
        refresh(gl, project, state)
        active = [t for t in state.pipelines if t.status in ACTIVE]
        if len(active) >= settings.max_concurrent:
            if str(payload_file) not in state.queued:
                state.queued.append(str(payload_file))
            return False, f"queued: {len(active)} pipelines running (max_concurrent)"
        tracked = create(gl, project, settings.ref, payload, payload_file)
        tracked.backend = backend
        state.pipelines.append(tracked)
    return True, f"pipeline {tracked.pipeline} {tracked.web_url}".strip()


def create(gl: Any, project: str, ref: str, payload: Any, payload_file: Path) -> Tracked:
    variables = {
        "HARNESS_PAYLOAD": payload.model_dump_json(),
        "HARNESS_WORKFLOW": payload.workflow,
        "HARNESS_CASE": payload.case_id,
    }
    found = gl.create_pipeline(project, ref, variables)
    now = clock.now()
    event(
        log,
        "pipeline_started",
        project=project,
        pipeline=found.get("id"),
        workflow=payload.workflow,
        case_id=payload.case_id,
    )
    return Tracked(
        pipeline=int(found["id"]),
        workflow=payload.workflow,
        case_id=payload.case_id,
        payload=str(payload_file),
        status=str(found.get("status") or "pending"),
        web_url=str(found.get("web_url") or ""),
        created_at=now,
        updated_at=now,
    )


def refresh(gl: Any, project: str, state: PipelinesState) -> list[Tracked]:
    """Re-read every active pipeline; returns the ones that just ended badly."""
    ended = []
    backend = "github-actions" if isinstance(gl, ActionsRuns) else "gitlab-ci"
    for tracked in state.pipelines:
        if tracked.status not in ACTIVE or tracked.backend != backend:
            continue
        status = str(gl.get_pipeline(project, tracked.pipeline).get("status") or tracked.status)
        if status != tracked.status:
            tracked.status, tracked.updated_at = status, clock.now()
            if status in ENDED_BADLY:
                ended.append(tracked)
    return ended


def cancel(gl: Any, project: str, tracked: Tracked) -> str:
    """Cancel a stuck pipeline if GitLab lets us; what happened, in a few words."""

    try:
        gl.cancel_pipeline(project, tracked.pipeline)
    except HarnessError as exc:  # its session is released all the same
        event(log, "pipeline_cancel_failed", logging.WARNING, pipeline=tracked.pipeline,
              error=exc.line())  # fmt: skip
        return f"could not be canceled ({exc.message}); cancel it in the CI"
    return "canceled"
