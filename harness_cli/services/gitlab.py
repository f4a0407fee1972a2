"""GitLab behind a small Protocol: the calls the harness makes, as plain data.

The live implementation wraps python-gitlab (imported lazily) with its own rate-limit
handling switched on: ``obey_rate_limit`` honours Retry-After / RateLimit-Reset on 429, and
``retry_transient_errors`` retries 5xx a bounded number of times. Every call is counted, so a
benchmark (and a test) can see what one mr-monitor cycle costs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from harness_cli.bounded import CHUNK, Bounded
from harness_cli.errors import ConfigError, ServiceError
from harness_cli.outbox import gitlab_door
from harness_cli.redaction import redact, redact_value
from harness_cli.services.forge import Discussion as Discussion  # re-exported: core code's
from harness_cli.services.forge import Forge  # names from before the forge port
from harness_cli.services.forge import MergeRequest as MergeRequest
from harness_cli.services.forge import Note as Note
from harness_cli.services.gitlab_guard import Bounds, guard

T = TypeVar("T")
TRACE_HEAD_BYTES = 256 << 10
TRACE_TAIL_BYTES = 4 << 20
"""What is kept of a CI job's log: its start and, larger, its end (where a failure says why)."""

QUICK_ACTION = re.compile(r"^(?=/[A-Za-z])", re.MULTILINE)
"""A line GitLab would run as a quick action (``/approve``, ``/merge``, ``/label ~x``…) — as the
harness's own user — when it reaches an MR description or a note: the slash at the very start
of the line (#28 R12)."""
DEFUSED = "\u200b"
"""Put before such a line's slash: a zero-width space, so the text reads the same and GitLab
runs nothing (its extractor wants the slash first; no whitespace rule strips this)."""


def outgoing(text: str) -> str:
    """Every text the harness sends GitLab (an MR description, a note, a reply) passes here:
    redacted, and no line of it a quick action. No text the harness sends is the operator's
    own today; one that is would be the only exception."""
    return QUICK_ACTION.sub(DEFUSED, redact(text))


GitLab = Forge
"""The name core code knew the port by before GitHub was a forge (services/forge.py)."""


@dataclass
class GitLabSettings:
    url: str
    token: str

    @classmethod
    def from_env(cls) -> GitLabSettings:
        token = os.environ.get("GITLAB_TOKEN")
        url = os.environ.get("GITLAB_URL")
        if not token or not url:
            missing = " and ".join(
                v for v, val in (("GITLAB_URL", url), ("GITLAB_TOKEN", token)) if not val
            )
            raise ConfigError(
                f"{missing} not set",
                hint="export the GitLab instance URL and a project access token",
            )
        return cls(url=url, token=token)


_MR_FIELDS = (
    "iid",
    "state",
    "source_branch",
    "target_branch",
    "title",
    "description",
    "web_url",
    "sha",
    "draft",
    "updated_at",
    "detailed_merge_status",
    "head_pipeline",
    "has_conflicts",
)


class LiveGitLab:
    """``GitLab`` over python-gitlab, inside :class:`gitlab_guard.Bounds` (retries and time)."""

    def __init__(
        self, settings: GitLabSettings, *, timeout: float = 30.0, max_retries: int = 3
    ) -> None:
        import gitlab

        # obey_rate_limit is python-gitlab's default (429: Retry-After, then RateLimit-Reset);
        # retry_transient_errors adds its backoff on 5xx, which Bounds cuts short.
        self._gl = gitlab.Gitlab(
            settings.url,
            private_token=settings.token,
            timeout=timeout,
            retry_transient_errors=True,
        )
        self._projects: dict[str, Any] = {}
        self.calls = 0
        self.bounds = Bounds(timeout=timeout, max_retries=max_retries)
        session = self._gl.session
        session.request = self.bounds.wrap(session.request)  # type: ignore[method-assign]

    @property
    def deadline(self) -> float | None:
        """``time.monotonic()`` by which a budgeted run (an mr-monitor cycle) must be done: no
        request starts after it, and no retry (a 429's Retry-After, a 5xx backoff) waits past
        it."""
        return self.bounds.deadline

    @deadline.setter
    def deadline(self, value: float | None) -> None:
        self.bounds.deadline = value

    @property
    def max_retries(self) -> int:
        """Transient failures (5xx, dropped connections) retried in a row, per call."""
        return self.bounds.max_retries

    @max_retries.setter
    def max_retries(self, value: int) -> None:
        self.bounds.max_retries = value

    def whoami(self) -> str:
        self.calls += 1
        self._guard(self._gl.auth)
        user = self._gl.user
        return str(getattr(user, "username", ""))

    def project(self, path: str) -> dict[str, Any]:
        return dict(self._project(path).attributes)

    def create_mr(
        self,
        project: str,
        *,
        source_branch: str,
        target_branch: str,
        title: str,
        description: str,
        draft: bool = False,
    ) -> MergeRequest:
        proj = self._project(project)
        full_title = f"Draft: {title}" if draft and not title.startswith("Draft:") else title
        self.calls += 1
        fields = {
            "source_branch": source_branch,
            "target_branch": target_branch,
            "title": redact(full_title),
            "description": outgoing(description),
        }
        try:
            return self._guard(
                lambda: self._mr(project, proj.mergerequests.create(fields)),
                f"creating the MR for {source_branch}",
            )
        except ServiceError as exc:
            if exc.status != 409:
                error = ServiceError(f"GitLab refused the MR for {source_branch}: {exc.message}")
                error.status = exc.status
                raise error from None
            # "Another open merge request already exists for this source branch": adopt it.
            found = self.list_mrs(project, state="opened")
            for existing in found:
                if existing.source_branch == source_branch:
                    existing.adopted = True
                    return existing
            raise ServiceError(
                f"GitLab says an MR exists for {source_branch} but none is open"
            ) from None

    def get_mr(self, project: str, iid: int) -> MergeRequest:
        self.calls += 1
        return self._guard(
            lambda: self._mr(project, self._project(project).mergerequests.get(iid)),
            f"GET MR {project}!{iid}",
        )

    def update_mr(self, project: str, iid: int, **fields: Any) -> MergeRequest:
        mr = self._project(project).mergerequests.get(iid, lazy=True)
        for name, value in fields.items():
            text = name == "description" and isinstance(value, str)
            setattr(mr, name, outgoing(value) if text else redact_value(value))
        self.calls += 1
        self._guard(mr.save)
        return self.get_mr(project, iid)

    def list_mrs(
        self,
        project: str,
        *,
        updated_after: str | None = None,
        state: str = "all",
        target_branch: str | None = None,
        recheck: bool = False,
    ) -> list[MergeRequest]:
        """``recheck``: ``with_merge_status_recheck`` — GitLab recomputes mergeability (a list
        can otherwise be stale after the target branch moved)."""
        params: dict[str, Any] = {"state": state, "get_all": True, "per_page": 100}
        if updated_after:
            params["updated_after"] = updated_after
        if target_branch:
            params["target_branch"] = target_branch
        if recheck:
            params["with_merge_status_recheck"] = True
        self.calls += 1

        def listing() -> list[MergeRequest]:
            found = self._project(project).mergerequests.list(**params)
            return [self._mr(project, mr) for mr in _a_list(found)]

        return self._guard(listing, f"the MR list of {project}")

    def pipelines(self, project: str, *, updated_after: str) -> list[dict[str, Any]]:
        """Pipelines created or changed (a re-run, a retry, a finished job) since then."""
        params = {"updated_after": updated_after, "get_all": True, "per_page": 100}
        self.calls += 1
        found = self._guard(lambda: self._project(project).pipelines.list(**params))
        return [dict(p.attributes) for p in found]

    def branch_head(self, project: str, branch: str) -> str:
        self.calls += 1
        found = self._guard(lambda: self._project(project).branches.get(branch))
        return str((found.attributes.get("commit") or {}).get("id") or "")

    def discussions(self, project: str, iid: int) -> list[Discussion]:
        mr = self._project(project).mergerequests.get(iid, lazy=True)
        self.calls += 1

        def reading() -> list[Discussion]:
            return [_discussion(d) for d in _a_list(mr.discussions.list(get_all=True))]

        return self._guard(reading, f"the discussions of {project}!{iid}")

    def reply(self, project: str, iid: int, discussion_id: str, body: str) -> None:
        """Through the outbox (#20): recorded first, made once, found again if its answer was
        lost, retried by a later run if GitLab refused it."""

        gitlab_door.write(
            self,
            lambda text: self.raw_reply(project, iid, discussion_id, text),
            action="reply", project=project, iid=iid, body=outgoing(body),
            discussion_id=discussion_id,
        )  # fmt: skip

    def note(self, project: str, iid: int, body: str) -> None:
        gitlab_door.write(
            self, lambda text: self.raw_note(project, iid, text),
            action="note", project=project, iid=iid, body=outgoing(body),
        )  # fmt: skip

    def raw_reply(self, project: str, iid: int, discussion_id: str, body: str) -> None:
        mr = self._project(project).mergerequests.get(iid, lazy=True)
        discussion = mr.discussions.get(discussion_id, lazy=True)
        self.calls += 1
        self._guard(lambda: discussion.notes.create({"body": outgoing(body)}))

    def raw_note(self, project: str, iid: int, body: str) -> None:
        mr = self._project(project).mergerequests.get(iid, lazy=True)
        self.calls += 1
        self._guard(lambda: mr.notes.create({"body": outgoing(body)}))

    def resolve(self, project: str, iid: int, discussion_id: str) -> None:
        mr = self._project(project).mergerequests.get(iid, lazy=True)
        discussion = mr.discussions.get(discussion_id, lazy=True)
        discussion.resolved = True
        self.calls += 1
        self._guard(discussion.save)

    def pipeline_jobs(self, project: str, pipeline_id: int) -> list[dict[str, Any]]:
        pipeline = self._project(project).pipelines.get(pipeline_id, lazy=True)
        self.calls += 1
        return self._guard(
            lambda: [dict(j.attributes) for j in _a_list(pipeline.jobs.list(get_all=True))],
            f"the jobs of pipeline {pipeline_id}",
        )

    def job_trace(self, project: str, job_id: int) -> str:
        job = self._project(project).jobs.get(job_id, lazy=True)
        self.calls += 1
        # A job's log is what the agent's code printed (#28 R10): streamed, its head and its
        # tail kept, never read whole.
        kept = Bounded(TRACE_HEAD_BYTES, TRACE_TAIL_BYTES)
        self._guard(lambda: job.trace(streamed=True, action=kept.feed, chunk_size=CHUNK))
        return kept.text()

    # -- pipelines of the harness's own project (HARNESS_DISPATCH=gitlab-ci) -------------------
    def create_pipeline(self, project: str, ref: str, variables: dict[str, str]) -> dict[str, Any]:
        body = {"ref": ref, "variables": [{"key": k, "value": v} for k, v in variables.items()]}
        self.calls += 1
        found = self._guard(lambda: self._project(project).pipelines.create(body))
        return dict(found.attributes)

    def get_pipeline(self, project: str, pipeline_id: int) -> dict[str, Any]:
        self.calls += 1
        found = self._guard(lambda: self._project(project).pipelines.get(pipeline_id))
        return dict(found.attributes)

    def cancel_pipeline(self, project: str, pipeline_id: int) -> None:
        pipeline = self._project(project).pipelines.get(pipeline_id, lazy=True)
        self.calls += 1
        self._guard(pipeline.cancel)

    # -- plumbing -------------------------------------------------------------------------------
    def _project(self, path: str) -> Any:
        if path not in self._projects:
            self.calls += 1
            self._projects[path] = self._guard(lambda: self._gl.projects.get(path))
        return self._projects[path]

    def _mr(self, project: str, mr: Any) -> MergeRequest:
        a = mr.attributes
        data = {k: a.get(k) for k in _MR_FIELDS}
        return MergeRequest(
            project=project,
            iid=int(data["iid"]),
            state=str(data["state"]),
            source_branch=str(data["source_branch"]),
            target_branch=str(data["target_branch"]),
            title=str(data["title"] or ""),
            description=str(data["description"] or ""),
            web_url=str(data["web_url"] or ""),
            sha=str(data["sha"] or ""),
            draft=bool(data["draft"]),
            updated_at=str(data["updated_at"] or ""),
            detailed_merge_status=str(data["detailed_merge_status"] or ""),
            head_pipeline=data["head_pipeline"],
            has_conflicts=bool(data["has_conflicts"]),
            author=str((a.get("author") or {}).get("username") or ""),
        )

    def _guard(self, fn: Callable[[], T], what: str = "a request") -> T:
        self.bounds.failures = 0
        return guard(fn, what)


def _a_list(found: Any) -> list[Any]:
    """python-gitlab's listing as a list; anything else (an object where GitLab documents a
    list, as a misconfigured proxy answers) is refused here, before it is read."""
    if not isinstance(found, list):
        raise TypeError(f"expected a list, got {type(found).__name__}")
    return found


def _discussion(d: Any) -> Discussion:
    notes = [
        Note(
            id=int(n["id"]),
            author=str((n.get("author") or {}).get("username", "")),
            body=str(n.get("body", "")),
            system=bool(n.get("system")),
            created_at=str(n.get("created_at", "")),
            resolvable=bool(n.get("resolvable")),
            resolved=bool(n.get("resolved")),
        )
        for n in d.attributes.get("notes", [])
    ]
    return Discussion(id=str(d.id), notes=notes)
