"""What every dev-agent mode works with: the run's services and case, the model call, the
case's worktree of the run's repository, and the case status moves the runs make."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_cli.config import Config
from harness_cli.delivery import worktrees
from harness_cli.errors import InputError, PolicyRefused, ServiceError
from harness_cli.logs import event
from harness_cli.loop.guard_notes import render_guard_notes
from harness_cli.loop.outage import backoffs
from harness_cli.loop.prompts import render
from harness_cli.loop.run_status import RunStatus, observe
from harness_cli.loop.runs import unavailable
from harness_cli.outbox.outbound import Outbound
from harness_cli.services.gitlab import GitLab
from harness_cli.services.runtime import RunRequest, RunResult, Runtime
from harness_cli.workspace import registry
from harness_cli.workspace.case import Case

log = logging.getLogger("harness.dev_agent")


@dataclass
class Work:
    cfg: Config
    case: Case
    case_dir: Path
    runtime: Runtime
    gitlab: GitLab
    out: Outbound
    args: dict[str, Any]
    quiet: bool = False
    """No outcome message in Slack (L3 escalations still go out)."""
    notes: list[str] = field(default_factory=list)
    status: RunStatus | None = None
    """The live status message in the case thread; delivery.run closes it with the outcome."""

    @property
    def project(self) -> str:
        """The repository this run works on: the payload names it (``repo``), or the MR does;
        only a task with neither falls back to the ticket project's first repo."""
        repo = self.args.get("repo")
        if repo:
            return str(repo)
        if "mr" in self.args:
            return str(self.args["mr"]).rsplit("!", 1)[0]
        repos = self.cfg.projects.projects[self.case.project].repos
        if not repos:
            raise InputError(
                f"project {self.case.project} lists no GitLab repos",
                hint="add repos: [group/project] to projects.yaml",
            )
        return repos[0]

    def checks(self) -> list[str]:
        """The checks of the repo being changed: the harness's own (`make test`) for its
        improvement MRs, else the ticket project's required checks."""
        improvement = self.cfg.harness.improvement
        if self.project == improvement.self_repo:
            return list(improvement.self_repo_checks)
        return list(self.cfg.projects.projects[self.case.project].required_checks)

    def agent(self, role: str, template: str, wt: worktrees.Worktree, **values: str) -> str:
        prompt = render(
            self.cfg,
            template,
            case_id=self.case.id,
            project=self.case.project,
            worktree=str(wt.path),
            branch=wt.branch,
            guard_notes=render_guard_notes(self.notes),
            **values,
        )
        self.notes = []
        result = self._run_through_outage(
            role,
            RunRequest(
                role=role,
                prompt=prompt,
                workdir=wt.path,
                allowed_root=wt.path,
                protect=(self.case_dir,),
                mcp_config=self.cfg.mcp_file,  # the catalog; writes only per `mcp: write_roles`
                max_turns=40,
                timeout_s=1200,
                on_event=observe(self.status, case_id=self.case.id, role=role),
            ),
        )
        event(
            log, "dev_agent_run", case_id=self.case.id, role=role, stop=result.stop,
            turns=result.turns, cost_usd=result.cost_usd, input_tokens=result.usage.input,
            output_tokens=result.usage.output, cache_creation_tokens=result.usage.cache_creation,
            cache_read_tokens=result.usage.cache_read, reverted=result.reverted,
        )  # fmt: skip
        if result.stop in ("error", "timeout") and not result.text:
            raise ServiceError(f"the {role} run failed: {result.error or result.stop}")
        return result.text

    def _run_through_outage(self, role: str, req: RunRequest) -> RunResult:
        """The run; one the model service failed transiently (429/5xx/529, connection) is run
        again with backoff (``loop.outage``), and still failing it is raised as an outage:
        the case then waits instead of failing (``delivery.run``)."""

        waits = backoffs(self.cfg.harness.model_outage)
        while True:
            if self.status is not None:
                self.status.start(role)
            result = self.runtime.run(req)
            failure = unavailable(role, result, self.case.id)
            if failure is None or failure.kind != "outage":
                return result
            if not waits:
                raise failure
            wait = waits.pop(0)
            event(log, "model_retry", logging.WARNING, role=role, wait_s=wait,
                  error=" ".join(failure.detail.split())[:200])  # fmt: skip
            time.sleep(wait)


def worktree_for(work: Work) -> worktrees.Worktree:
    """The case's worktree of the run's repository — never another repository's (the ticket's
    worktree is not the harness repo's). An MR's branch names the key outright."""
    found = worktrees.for_case_repo(work.case.id, work.project)
    branch = str(work.args.get("branch") or "")
    if found is None:
        info = work.gitlab.project(work.project)
        found = worktrees.create(
            worktrees.worktree_key(work.case.id, work.project, branch=branch or None),
            str(info["http_url_to_repo"]),
            work.project,
            str(info.get("default_branch") or "main"),
            thresholds=work.cfg.harness.delivery,
            case=work.case.id,
        )
    else:  # the identity may have been configured since the worktree was made
        worktrees.apply_identity(found, work.cfg.harness.delivery)
    if branch and found.branch != branch:
        raise PolicyRefused(
            f"the MR's branch {branch} is not the case branch {found.branch}",
            hint="the harness pushes only its own case branches; a human owns that one",
        )
    return found


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""


def move_case(work: Work, status: str, note: str) -> None:
    with registry.update_case(work.case.id, work.cfg.harness.thresholds, note) as case:
        if status == "in_progress" and case.status == "mr_open":
            return
        if status == "failed" and case.status != "in_progress":
            return  # only a run that left the case in progress hands it back
        if case.status != status:
            case.move(status, by="dev-agent", note=note)


def set_plan_pending(work: Work) -> None:
    with registry.update_case(work.case.id, work.cfg.harness.thresholds, "plan waiting") as c:
        c.plan_pending = True
