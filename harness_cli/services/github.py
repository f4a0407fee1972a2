"""GitHub behind the forge port (services/forge.py), through PyGithub (docs/GITHUB.md).

A pull request is a :class:`MergeRequest` (``iid`` = its number); what GitLab calls notes and
discussions are, on GitHub:

- the PR's conversation (issue comments): one :class:`Discussion` with the id
  ``conversation``; a reply to it is a new issue comment;
- each review thread: a :class:`Discussion` whose id is its first comment's id (what the REST
  reply endpoint takes), its notes resolvable, resolved when the thread is.

Both are read in ONE GraphQL query (REST has no thread resolution). A pipeline is the set of
Actions runs of the head SHA, folded into GitLab's words (``running``/``failed``/``success``);
its id is the run id to fix (the failed run, else the newest), its jobs are that run's jobs.
Drafts: a ``Draft:`` title prefix (what delivery writes for GitLab) becomes GitHub's draft
flag (GraphQL ``convertPullRequestToDraft`` / ``markPullRequestReadyForReview``), never text.

Cron-safe construction (docs/GITHUB.md): no sleep between requests, GithubRetry capped so a
rate limit never waits past the run's deadline, 403/429 rate limits reported as status 429
(mr-monitor ends its cycle on it), ETags kept in ``$HARNESS_HOME/github-etags.json`` so an
unchanged PR listing or PR answers 304, which GitHub does not count against the rate limit.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from harness_cli.bounded import CHUNK, Bounded
from harness_cli.errors import ConfigError, ServiceError
from harness_cli.faults import crash_point
from harness_cli.outbox import gitlab_door
from harness_cli.paths import state_file
from harness_cli.redaction import redact
from harness_cli.services.forge import Discussion, MergeRequest, Note
from harness_cli.services.gitlab import TRACE_HEAD_BYTES, TRACE_TAIL_BYTES, outgoing
from harness_cli.state.store import atomic_write_json

T = TypeVar("T")
DRAFT_PREFIX = "Draft: "
CONVERSATION = "conversation"
"""The discussion id of a PR's conversation (its issue comments)."""
ETAG_ENTRIES = 2000
"""ETags (with the answer they stand for) kept on disk; the oldest go first."""

_STATE = {"open": "opened", "closed": "closed"}
_MERGE_STATE = {
    "clean": "mergeable",
    "has_hooks": "mergeable",
    "unstable": "mergeable",
    "dirty": "conflict",
    "behind": "need_rebase",
    "blocked": "blocked_status",
    "draft": "draft_status",
    "unknown": "checking",
}
"""GitHub's ``mergeable_state`` in GitLab's ``detailed_merge_status`` words (decide.py reads
``conflict``/``need_rebase`` as a push recovery, ``checking`` as "read again")."""
_RUN_STATUS = {
    "success": "success",
    "failure": "failed",
    "timed_out": "failed",
    "startup_failure": "failed",
    "cancelled": "canceled",
    "skipped": "skipped",
    "neutral": "success",
    "action_required": "manual",
    "stale": "canceled",
}
_ACTIVE = {"queued", "in_progress", "waiting", "requested", "pending"}

_THREADS = """
query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      comments(first: 100) { nodes { databaseId body createdAt author { login } } }
      reviewThreads(first: 100) {
        nodes {
          id isResolved
          comments(first: 100) { nodes { databaseId body createdAt author { login } } }
        }
      }
    }
  }
}
"""


@dataclass
class GitHubSettings:
    url: str
    token: str

    @classmethod
    def from_env(cls) -> GitHubSettings:
        token = os.environ.get("GITHUB_TOKEN")
        url = os.environ.get("GITHUB_URL") or "https://api.github.com"
        if not token:
            raise ConfigError(
                "GITHUB_TOKEN not set (a project has forge: github)",
                hint="export a token with contents, pull requests, checks and actions access "
                "(GITHUB_URL too for GitHub Enterprise: https://HOST/api/v3)",
            )
        return cls(url=url.rstrip("/"), token=token)


class LiveGitHub:
    """The forge port over PyGithub's requester: one request per call, counted."""

    def __init__(
        self, settings: GitHubSettings, *, timeout: float = 30.0, max_retries: int = 3
    ) -> None:
        # PyGithub is imported here, not at module top: `harness --help` must not load it.
        from github import Auth, Github, GithubRetry

        self._retry = GithubRetry
        self.max_retries = max_retries
        self.deadline: float | None = None
        self.timeout = timeout
        self._gh = Github(
            base_url=settings.url,
            auth=Auth.Token(settings.token),
            timeout=int(timeout),
            # a cron run: no sleep before each request; a secondary limit on a burst of
            # comments is a refusal the outbox retries next run, not a reason to sleep here
            seconds_between_requests=None,
            seconds_between_writes=None,
            retry=GithubRetry(total=max_retries, max_rate_limit_wait=60),
            lazy=True,
        )
        self._rq = self._gh.requester
        self.calls = 0
        """Requests GitHub counts against the rate limit (a 304 is free)."""
        self.requests = 0
        """Every request sent, 304s included."""
        self._me = ""
        self._runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
        """Actions runs by (repo, head SHA) seen in this process's pipeline listing."""
        self._etags: dict[str, Any] | None = None
        self._runs_complete: dict[str, bool] = {}
        self._server_now: float | None = None
        """The server's clock (its ``Date``) at the last answer."""

    # -- the port -------------------------------------------------------------------------------
    def whoami(self) -> str:
        if not self._me:
            self._me = str(self._get("/user", what="the token's user").get("login") or "")
        return self._me

    def scopes(self) -> tuple[str, list[str] | None]:
        """The token's login and classic scopes (``X-OAuth-Scopes``; None for a fine-grained
        token, which has permissions instead) — for ``doctor``."""
        headers, data = self._request("GET", "/user", what="the token's user")
        raw = {k.lower(): v for k, v in headers.items()}.get("x-oauth-scopes")
        found = None if raw is None else [s.strip() for s in str(raw).split(",") if s.strip()]
        return str(data.get("login") or ""), found

    def probe(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """One GET, for ``doctor`` trying what a fine-grained token may read."""
        return self._get(path, params=params)

    def project(self, path: str) -> dict[str, Any]:
        repo = self._get(f"/repos/{path}", what=f"the repository {path}")
        clone = str(repo.get("clone_url") or "")
        return {
            **repo,
            "path_with_namespace": repo.get("full_name", path),
            "http_url_to_repo": clone,
            "default_branch": repo.get("default_branch") or "main",
        }

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
        bare = title.removeprefix(DRAFT_PREFIX)
        body = {
            "head": source_branch,
            "base": target_branch,
            "title": redact(bare),
            "body": outgoing(description),
            "draft": bool(draft or title.startswith(DRAFT_PREFIX)),
        }
        try:
            _, data = self._request(
                "POST",
                f"/repos/{project}/pulls",
                body=body,
                what=f"creating the PR for {source_branch}",
            )
        except ServiceError as exc:
            if exc.status != 422 or "already exists" not in exc.message:
                error = ServiceError(f"GitHub refused the PR for {source_branch}: {exc.message}")
                error.status = exc.status
                raise error from None
            # "A pull request already exists for owner:branch": adopt it (GitLab's 409).
            owner = project.split("/", 1)[0]
            found = self._get(
                f"/repos/{project}/pulls",
                params={"state": "open", "head": f"{owner}:{source_branch}"},
            )
            if not found:
                raise ServiceError(
                    f"GitHub says a PR exists for {source_branch} but none is open"
                ) from None
            existing = self.get_mr(project, int(found[0]["number"]))
            existing.adopted = True
            return existing
        return self._mr(project, data, full=False)

    def get_mr(self, project: str, iid: int) -> MergeRequest:
        """The PR as it is once the second of its last update is over (``_unsettled``): what
        this read returns is then all that second holds, and a later change is a later
        ``updated_at``. Waits at most a second, rarely (an update in the very second read)."""
        path = f"/repos/{project}/pulls/{iid}"
        data = self._get(path, what=f"PR {project}#{iid}", etag=True)
        for _ in range(2):
            wait = self._unsettled(str(data.get("updated_at") or ""))
            if wait <= 0 or (self.deadline is not None and time.monotonic() + wait > self.deadline):
                break
            time.sleep(wait + 0.05)
            data = self._get(path, what=f"PR {project}#{iid}", etag=True)
        return self._mr(project, data, full=True)

    def update_mr(self, project: str, iid: int, **fields: Any) -> MergeRequest:
        body: dict[str, Any] = {}
        want_draft: bool | None = None
        if isinstance(fields.get("title"), str):
            title = str(fields["title"])
            want_draft = title.startswith(DRAFT_PREFIX)
            body["title"] = redact(title.removeprefix(DRAFT_PREFIX))
        if isinstance(fields.get("description"), str):
            body["body"] = outgoing(str(fields["description"]))
        if "draft" in fields:
            want_draft = bool(fields["draft"])
        if "state_event" in fields:
            body["state"] = {"close": "closed", "reopen": "open"}.get(str(fields["state_event"]))
        data: dict[str, Any] = {}
        if body:
            _, data = self._request(
                "PATCH",
                f"/repos/{project}/pulls/{iid}",
                body=body,
                what=f"updating PR {project}#{iid}",
            )
        if want_draft is not None:
            if not data:
                data = self._get(f"/repos/{project}/pulls/{iid}")
            if bool(data.get("draft")) != want_draft:
                flip = (
                    "convertPullRequestToDraft" if want_draft else "markPullRequestReadyForReview"
                )
                # GitHub's second write: a kill here leaves the new title on a PR still in its
                # old draft state; the next submit reads "Draft: " and flips it then
                crash_point("forge.pr_patched")
                self._graphql_mutation(flip, {"pullRequestId": data["node_id"]})
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
        """Newest-updated first, one page of 100 read while it is newer than ``updated_after``
        (GitHub has no ``since`` on pulls). ``recheck``: each PR is read alone, the only way
        GitHub gives its mergeability."""
        params: dict[str, Any] = {
            "state": {"opened": "open", "merged": "closed"}.get(state, state),
            "sort": "updated",
            "direction": "desc",
            "per_page": 100,
        }
        if target_branch:
            params["base"] = target_branch
        found: list[MergeRequest] = []
        page = 1
        while True:
            data = self._get(
                f"/repos/{project}/pulls",
                params={**params, "page": page},
                what=f"the PR list of {project}",
                etag=True,
            )
            if not isinstance(data, list):
                raise ServiceError(f"GitHub's PR list of {project} is not a list")
            for item in data:
                mr = self._mr(project, item, full=False)
                if updated_after and _stamp(mr.updated_at) < _stamp(updated_after):
                    return self._rechecked(project, found, recheck)
                if state == "merged" and mr.state != "merged":
                    continue
                found.append(mr)
            if len(data) < params["per_page"]:
                return self._rechecked(project, found, recheck)
            page += 1

    def pipelines(self, project: str, *, updated_after: str) -> list[dict[str, Any]]:
        """Runs changed since then (a re-run too), from the newest 100; remembered by head SHA
        for this process, so examining a PR they name costs no second read of its runs."""
        data = self._get(
            f"/repos/{project}/actions/runs",
            params={"per_page": 100},
            what=f"the workflow runs of {project}",
            etag=True,
        )
        runs = list(data.get("workflow_runs") or [])
        # the newest 100 runs, all of them: a SHA with none here has none at all
        self._runs_complete[project] = len(runs) < 100
        by_sha: dict[str, list[dict[str, Any]]] = {}
        for run in runs:
            by_sha.setdefault(str(run.get("head_sha") or ""), []).append(run)
        for sha, found in by_sha.items():
            self._runs[(project, sha)] = found
        after = _stamp(updated_after)
        folded = []
        for found in by_sha.values():
            if any(_stamp(str(r.get("updated_at") or "")) >= after for r in found):
                pipeline = _fold(found)
                if pipeline:
                    folded.append(pipeline)
        return folded

    def branch_head(self, project: str, branch: str) -> str:
        data = self._get(f"/repos/{project}/branches/{branch}", what=f"branch {branch}", etag=True)
        return str((data.get("commit") or {}).get("sha") or "")

    def discussions(self, project: str, iid: int) -> list[Discussion]:
        owner, name = project.split("/", 1)
        data = self._graphql(_THREADS, {"owner": owner, "name": name, "number": int(iid)})
        pr = ((data.get("repository") or {}).get("pullRequest")) or None
        if pr is None:
            error = ServiceError(f"GitHub: 404 no PR {project}#{iid}")
            error.status = 404
            raise error
        conversation = Discussion(
            CONVERSATION,
            [_note(c, resolvable=False, resolved=False) for c in pr["comments"]["nodes"]],
        )
        found = [conversation] if conversation.notes else []
        for thread in pr["reviewThreads"]["nodes"]:
            comments = thread["comments"]["nodes"]
            if not comments:
                continue
            resolved = bool(thread.get("isResolved"))
            notes = [_note(c, resolvable=True, resolved=resolved) for c in comments]
            found.append(Discussion(str(comments[0]["databaseId"]), notes))
        return found

    def reply(self, project: str, iid: int, discussion_id: str, body: str) -> None:
        """Through the outbox (#20), as on GitLab: recorded, made once, found again if its
        answer was lost — claude-code-action's duplicate comment under a kill is the bug."""

        gitlab_door.write(
            self,
            lambda text: self.raw_reply(project, iid, discussion_id, text),
            action="reply",
            project=project,
            iid=iid,
            body=outgoing(body),
            discussion_id=discussion_id,
        )

    def note(self, project: str, iid: int, body: str) -> None:
        gitlab_door.write(
            self,
            lambda text: self.raw_note(project, iid, text),
            action="note",
            project=project,
            iid=iid,
            body=outgoing(body),
        )

    def raw_reply(self, project: str, iid: int, discussion_id: str, body: str) -> None:
        if discussion_id == CONVERSATION:
            self.raw_note(project, iid, body)
            return
        self._request(
            "POST",
            f"/repos/{project}/pulls/{iid}/comments/{discussion_id}/replies",
            body={"body": outgoing(body)},
            what=f"a reply on {project}#{iid}",
        )

    def raw_note(self, project: str, iid: int, body: str) -> None:
        self._request(
            "POST",
            f"/repos/{project}/issues/{iid}/comments",
            body={"body": outgoing(body)},
            what=f"a comment on {project}#{iid}",
        )

    def resolve(self, project: str, iid: int, discussion_id: str) -> None:
        if discussion_id == CONVERSATION:
            return  # a conversation has nothing to resolve
        owner, name = project.split("/", 1)
        query = _THREADS.replace("databaseId body", "databaseId")
        data = self._graphql(query, {"owner": owner, "name": name, "number": int(iid)})
        threads = data["repository"]["pullRequest"]["reviewThreads"]["nodes"]
        for thread in threads:
            first = (thread["comments"]["nodes"] or [{}])[0].get("databaseId")
            if str(first) == discussion_id and not thread.get("isResolved"):
                self._graphql_mutation("resolveReviewThread", {"threadId": thread["id"]})

    def pipeline_jobs(self, project: str, pipeline_id: int) -> list[dict[str, Any]]:
        data = self._get(
            f"/repos/{project}/actions/runs/{pipeline_id}/jobs",
            params={"per_page": 100},
            what=f"the jobs of run {pipeline_id}",
        )
        jobs = []
        for job in data.get("jobs") or []:
            status = str(job.get("status") or "")
            mapped = (
                "running"
                if status in _ACTIVE
                else _RUN_STATUS.get(str(job.get("conclusion") or ""), "failed")
            )
            jobs.append({**job, "status": mapped, "retried": False})
        return jobs

    def job_trace(self, project: str, job_id: int) -> str:
        """GitHub answers a job's log with a 302 to a short-lived URL; the log is streamed
        from there, its head and tail kept (#28 R10), never read whole."""
        status, headers, _ = self._raw(
            "GET", f"/repos/{project}/actions/jobs/{job_id}/logs", what=f"the log of job {job_id}"
        )
        location = {k.lower(): v for k, v in headers.items()}.get("location")
        if status != 302 or not location:
            raise _error(f"GitHub: {status} no log location for job {job_id}", status)
        import requests

        kept = Bounded(TRACE_HEAD_BYTES, TRACE_TAIL_BYTES)
        self.calls += 1
        self.requests += 1
        try:
            with requests.get(location, stream=True, timeout=self._left()) as resp:
                if resp.status_code != 200:
                    raise _error(
                        f"GitHub: {resp.status_code} the log of job {job_id}", resp.status_code
                    )
                for chunk in resp.iter_content(CHUNK):
                    kept.feed(chunk)
        except requests.RequestException as exc:
            raise _error(f"GitHub: the log of job {job_id} unreachable: {exc}", None) from None
        return kept.text()

    # -- Actions for the harness's own repo (dispatch: github-actions) --------------------------
    def dispatch_workflow(
        self, project: str, workflow: str, ref: str, inputs: dict[str, str]
    ) -> dict[str, Any]:
        _, data = self._request(
            "POST",
            f"/repos/{project}/actions/workflows/{workflow}/dispatches",
            body={"ref": ref, "inputs": inputs, "return_run_details": True},
            what=f"dispatching {workflow}",
        )
        return data if isinstance(data, dict) else {}

    def get_run(self, project: str, run_id: int) -> dict[str, Any]:
        data: dict[str, Any] = self._get(f"/repos/{project}/actions/runs/{run_id}")
        return data

    def cancel_run(self, project: str, run_id: int) -> None:
        self._request("POST", f"/repos/{project}/actions/runs/{run_id}/cancel")

    # -- plumbing -------------------------------------------------------------------------------
    def _mr(self, project: str, data: dict[str, Any], *, full: bool) -> MergeRequest:
        state = _STATE.get(str(data.get("state")), str(data.get("state")))
        if data.get("merged") or data.get("merged_at"):
            state = "merged"
        sha = str((data.get("head") or {}).get("sha") or "")
        merge_status, conflicts = "", False
        pipeline: dict[str, Any] | None = None
        if full:
            mergeable = data.get("mergeable")
            if mergeable is None:
                merge_status = "checking"  # GitHub computes it in the background: read again
            else:
                merge_status = _MERGE_STATE.get(str(data.get("mergeable_state")), "mergeable")
                conflicts = mergeable is False
                if conflicts:
                    merge_status = "conflict"
            if state == "opened" and sha:
                pipeline = self._head_pipeline(project, sha)
        return MergeRequest(
            project=project,
            iid=int(data["number"]),
            state=state,
            source_branch=str((data.get("head") or {}).get("ref") or ""),
            target_branch=str((data.get("base") or {}).get("ref") or ""),
            title=(DRAFT_PREFIX if data.get("draft") else "") + str(data.get("title") or ""),
            description=str(data.get("body") or ""),
            web_url=str(data.get("html_url") or ""),
            sha=sha,
            draft=bool(data.get("draft")),
            updated_at=str(data.get("updated_at") or ""),
            detailed_merge_status=merge_status,
            head_pipeline=pipeline,
            has_conflicts=conflicts,
            author=str((data.get("user") or {}).get("login") or ""),
        )

    def _unsettled(self, updated: str) -> float:
        """Seconds until the second of ``updated`` is over on the server's clock (its
        ``Date``); 0 when it already is. GitHub's ``updated_at`` has whole seconds: a comment
        made in the same second as a read would leave ``updated_at`` as that read saw it, and
        mr-monitor would never see the comment as a change."""
        try:
            at = datetime.fromisoformat(updated.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return 0.0
        if self._server_now is None or int(self._server_now) > int(at):
            return 0.0
        return int(at) + 1 - self._server_now

    def _head_pipeline(self, project: str, sha: str) -> dict[str, Any] | None:
        runs = self._runs.get((project, sha))
        if runs is None and self._runs_complete.get(project):
            return None  # this process listed every run of the project: none for this SHA
        if runs is None:
            data = self._get(
                f"/repos/{project}/actions/runs",
                params={"head_sha": sha, "per_page": 100},
                what=f"the workflow runs of {sha[:12]}",
            )
            runs = list(data.get("workflow_runs") or [])
        return _fold(runs)

    def _rechecked(
        self, project: str, found: list[MergeRequest], recheck: bool
    ) -> list[MergeRequest]:
        if not recheck:
            return found
        return [self.get_mr(project, mr.iid) if mr.state == "opened" else mr for mr in found]

    def _graphql(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        self._count()
        _, data = self._guard(lambda: self._rq.graphql_query(query, variables), "a GraphQL query")
        return dict(data.get("data") or {})

    def _graphql_mutation(self, name: str, payload: dict[str, Any]) -> None:
        self._count()
        self._guard(
            lambda: self._rq.graphql_named_mutation(name, payload, "clientMutationId"), name
        )

    def _get(
        self, path: str, *, params: dict[str, Any] | None = None, what: str = "", etag: bool = False
    ) -> Any:
        if not etag:
            return self._request("GET", path, params=params, what=what)[1]
        key = path + ("?" + json.dumps(params, sort_keys=True) if params else "")
        cached = self._etag_store().get(key)
        headers = {"If-None-Match": cached["etag"]} if cached else {}
        status, got, text = self._raw("GET", path, params=params, headers=headers, what=what)
        if status == 304 and cached:
            self.calls -= 1  # GitHub counts no 304 against the rate limit
            return cached["body"]
        data = self._check(status, got, text, what)
        tag = {k.lower(): v for k, v in got.items()}.get("etag")
        if tag:
            self._remember(key, tag, data)
        return data

    def _request(
        self,
        verb: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: Any = None,
        what: str = "",
    ) -> tuple[dict[str, Any], Any]:
        status, headers, text = self._raw(verb, path, params=params, body=body, what=what)
        return headers, self._check(status, headers, text, what)

    def _raw(
        self,
        verb: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        body: Any = None,
        what: str = "",
    ) -> tuple[int, dict[str, Any], str]:
        self._count()
        found = self._guard(
            lambda: self._rq.requestJson(verb, path, params, headers, body),
            what or f"{verb} {path}",
        )
        date = {k.lower(): v for k, v in found[1].items()}.get("date")
        if date:
            with contextlib.suppress(TypeError, ValueError):
                self._server_now = parsedate_to_datetime(str(date)).timestamp()
        return found

    def _check(self, status: int, headers: dict[str, Any], text: str, what: str) -> Any:
        if status >= 400:
            raise _http_error(status, headers, text, what)
        if not text:
            return {}
        try:
            return json.loads(text)
        except ValueError:
            raise _error(
                f"GitHub's answer to {what or 'a request'} is not JSON (a proxy page?)",
                None,
                "check GITHUB_URL points at the API (https://HOST/api/v3 on Enterprise)",
            ) from None

    def _count(self) -> None:
        self.calls += 1
        self.requests += 1
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise _error(
                "GitHub: no time left in this run's budget",
                None,
                "the next run resumes where this one stopped",
            )

    def _left(self) -> float:
        if self.deadline is None:
            return self.timeout
        return max(0.1, min(self.timeout, self.deadline - time.monotonic()))

    def _guard(self, fn: Callable[[], T], what: str) -> T:
        import github
        import requests

        try:
            return fn()
        except github.GithubException as exc:
            text = json.dumps(exc.data) if not isinstance(exc.data, str) else exc.data
            raise _http_error(exc.status, exc.headers or {}, text, what) from None
        except requests.exceptions.RetryError as exc:
            status = 429 if "403" in str(exc) or "429" in str(exc) else 503
            raise _error(
                f"GitHub: {what} failed after retries ({_short(str(exc))})",
                status,
                "the next run tries again",
            ) from None
        except (requests.RequestException, OSError) as exc:
            raise _error(
                f"GitHub unreachable: {_short(str(exc))}", None, "check GITHUB_URL"
            ) from None

    # -- ETags in a state file (a cron cycle is a new process) ----------------------------------
    def _etag_store(self) -> dict[str, Any]:
        if self._etags is None:
            try:
                loaded = json.loads(_etag_path().read_text())
            except (OSError, ValueError):
                loaded = {}
            self._etags = loaded if isinstance(loaded, dict) else {}
        return self._etags

    def _remember(self, key: str, tag: str, body: Any) -> None:
        store = self._etag_store()
        store.pop(key, None)
        store[key] = {"etag": tag, "body": body}
        while len(store) > ETAG_ENTRIES:
            store.pop(next(iter(store)))
        with contextlib.suppress(OSError):  # a cache: the next run asks without If-None-Match
            atomic_write_json(_etag_path(), store)


def _etag_path() -> Any:
    return state_file("github-etags.json")


def _fold(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The Actions runs of one SHA as one GitLab-shaped pipeline: running while any is, failed
    when any failed (its id is that run's), else the newest run's result."""
    if not runs:
        return None
    latest: dict[str, dict[str, Any]] = {}
    for run in sorted(runs, key=lambda r: int(r.get("id") or 0)):
        latest[str(run.get("workflow_id") or run.get("name") or "")] = run
    found = list(latest.values())

    def status(run: dict[str, Any]) -> str:
        if str(run.get("status")) in _ACTIVE:
            return "running"
        return _RUN_STATUS.get(str(run.get("conclusion") or ""), "failed")

    chosen = next((r for r in found if status(r) == "running"), None)
    chosen = chosen or next((r for r in found if status(r) == "failed"), None)
    chosen = chosen or max(found, key=lambda r: int(r.get("id") or 0))
    return {
        "id": int(chosen["id"]),
        "status": status(chosen),
        "sha": str(chosen.get("head_sha") or ""),
        "ref": str(chosen.get("head_branch") or ""),
        "web_url": str(chosen.get("html_url") or ""),
        "updated_at": str(chosen.get("updated_at") or ""),
    }


def _note(c: dict[str, Any], *, resolvable: bool, resolved: bool) -> Note:
    return Note(
        id=int(c.get("databaseId") or 0),
        author=str((c.get("author") or {}).get("login") or ""),
        body=str(c.get("body") or ""),
        system=False,
        created_at=str(c.get("createdAt") or ""),
        resolvable=resolvable,
        resolved=resolved,
    )


def _stamp(text: str) -> str:
    """An ISO instant comparable as text (GitHub's ``Z`` and GitLab's millis alike)."""
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return text
    return at.strftime("%Y-%m-%dT%H:%M:%S.%f")


_RATE = re.compile(r"rate limit", re.IGNORECASE)


def _http_error(status: int, headers: dict[str, Any], text: str, what: str) -> ServiceError:
    lower = {str(k).lower(): v for k, v in (headers or {}).items()}
    message = text
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        data = json.loads(text)
        message = str(data.get("message") or text)
        # a 422's reasons are in ``errors`` ("A pull request already exists for o:b.")
        reasons = [str(e.get("message") or e.get("code") or "") for e in data.get("errors") or []]
        if any(reasons):
            message += ": " + "; ".join(r for r in reasons if r)
    exhausted = lower.get("x-ratelimit-remaining") == "0"
    if status in (403, 429) and (exhausted or _RATE.search(message)):
        return _error(
            f"GitHub: rate limited at {what} ({_short(message)})",
            429,
            "the next run resumes where this one stopped",
        )
    if status == 401:
        return _error(
            "GitHub rejected GITHUB_TOKEN (401)",
            401,
            "issue a new token with contents, pull requests, checks and actions",
        )
    if message.lstrip().startswith("<"):
        message = "an HTML page instead of GitHub's JSON (a proxy in front of GitHub?)"
    return _error(f"GitHub: {status} {_short(message)}", status, None)


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= 200 else text[:199] + "…"


def _error(message: str, status: int | None, hint: str | None = None) -> ServiceError:
    error = ServiceError(message, hint=hint)
    error.status = status
    return error
