"""A GitHub emulator that PyGithub (and plain git over smart HTTP) talks to unchanged, laid
out like GitHub Enterprise Server: REST v3 under ``/api/v3``, GraphQL at ``/api/graphql``,
repositories at ``/<owner>/<name>.git``. Backed by real bare repositories and an Actions
runner that runs each workflow's ``run:`` steps on the pushed tree.

    emu = GitHubEmulator(data_dir=tmp_path)
    emu.start()
    emu.control("create_repo", {"repo": "acme/app", "files": {...}, "ci_command": "pytest"})
    gh = github.Github(base_url=emu.api_url, auth=github.Auth.Token("ghp_…"))
    git clone http://x-access-token:ghp_…@127.0.0.1:PORT/acme/app.git

Every answer carries ``X-GitHub-Request-Id`` and the primary rate limit's
``X-RateLimit-Limit/Remaining/Reset/Used/Resource``; GETs carry an ``ETag`` and answer 304 to
a matching ``If-None-Match`` without counting it. Misbehaviour on demand: see
:meth:`fault_response` and :mod:`github_control`.
"""

from __future__ import annotations

import io
import itertools
import time
import zipfile
from http import HTTPStatus
from pathlib import Path
from typing import Any

from harness_cli.sandbox import git_http
from harness_cli.sandbox.github_control import GitHubControl
from harness_cli.sandbox.github_graphql import run_graphql
from harness_cli.sandbox.github_http import DOCS, Ctx, accepted_header, etag, wrap
from harness_cli.sandbox.github_humans import HumanActions
from harness_cli.sandbox.github_model import Account, Token
from harness_cli.sandbox.github_render import Urls
from harness_cli.sandbox.github_routes_actions import ROUTES as ACTIONS_ROUTES
from harness_cli.sandbox.github_routes_checks import ROUTES as CHECK_ROUTES
from harness_cli.sandbox.github_routes_comments import ROUTES as COMMENT_ROUTES
from harness_cli.sandbox.github_routes_pulls import ROUTES as PULL_ROUTES
from harness_cli.sandbox.github_routes_repo import ROUTES as REPO_ROUTES
from harness_cli.sandbox.github_state import GitHubState, RateWindow
from harness_cli.sandbox.httpbase import Emulator, Fault, Request, Response

__all__ = ["API_PREFIX", "GRAPHQL_PATH", "GitHubEmulator"]

API_PREFIX = "/api/v3"
GRAPHQL_PATH = "/api/graphql"
RATE_DOCS = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"


class GitHubEmulator(Emulator):
    name = "github"

    def __init__(self, data_dir: Path, *, ci_timeout: float = 120.0) -> None:
        super().__init__()
        self.state = GitHubState(Path(data_dir))
        self.state.actions.runner.timeout = ci_timeout
        self.routes = [*REPO_ROUTES, *COMMENT_ROUTES, *PULL_ROUTES, *CHECK_ROUTES, *ACTIONS_ROUTES]
        self.controls = GitHubControl(self)
        self.humans = HumanActions(self.state)
        self.rate_limit_status = 403
        """What an exhausted primary rate limit answers (GitHub sends 403 or 429)."""
        self._request_ids = itertools.count(1)

    @property
    def api_url(self) -> str:
        """What ``GITHUB_URL`` points at (GitHub Enterprise Server's REST base)."""
        return self.url + API_PREFIX

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        url = super().start(host, port)
        self.state.actions.runner.api_url = url + API_PREFIX
        return url

    def stop(self) -> None:
        self.state.actions.runner.stop()
        super().stop()

    def wait_for_runs(self, timeout: float = 60.0) -> None:
        """Block until no workflow run is queued or in progress (raises TimeoutError)."""
        self.state.wait_idle(timeout)

    # -- HTTP -------------------------------------------------------------------------------
    def _urls(self, req: Request) -> Urls:
        host = req.headers.get("host")
        web = f"http://{host}" if host else self.url
        return Urls(web=web, api=web + API_PREFIX)

    def _request_id(self) -> str:
        n = next(self._request_ids)
        return f"{n:04X}:{n * 7 % 65536:04X}:{n * 31:07X}:{n * 97:07X}:{int(time.time()):08X}"

    def route(self, req: Request) -> Response:
        if req.path.startswith("/_blobs/"):
            return self._blob(req)
        git = git_http.split_git_path(req.path)
        if git is not None:
            return self.controls.serve_git(req, *git)
        if req.path == GRAPHQL_PATH or req.path.startswith(API_PREFIX + "/"):
            return self._api(req)
        return Response.json({"message": "Not Found", "documentation_url": DOCS}, status=404)

    def _authenticate(self, req: Request) -> tuple[Account, Token] | None:
        scheme, _, value = req.headers.get("authorization", "").partition(" ")
        if scheme.lower() not in ("token", "bearer"):
            return None
        return self.state.authenticate(value.strip())

    def _api(self, req: Request) -> Response:
        request_id = self._request_id()
        base = {
            "X-GitHub-Request-Id": request_id,
            "X-GitHub-Media-Type": "github.v3; format=json",
            "X-GitHub-Api-Version-Selected": "2022-11-28",
        }
        found = self._authenticate(req)
        if found is None:
            message = (
                "Bad credentials"
                if req.headers.get("authorization")
                else ("Requires authentication")
            )
            body = {"message": message, "documentation_url": DOCS, "status": "401"}
            return Response.json(body, status=401, headers=base)
        user, token = found
        resource = "graphql" if req.path == GRAPHQL_PATH else "core"
        with self.state.lock:
            window = self.state.rate(user, resource)
            if token.scopes is not None:
                base["X-OAuth-Scopes"] = ", ".join(token.scopes)
                base["X-Accepted-OAuth-Scopes"] = "repo"
            path = req.path[len(API_PREFIX) :]
            if path == "/rate_limit":
                return self._rate_limit_answer(user, window, base)
            if window.remaining == 0:
                return self._primary_limited(user, window, request_id, base)
            if resource == "graphql":
                body = req.json_body()
                resp = Response.json(
                    run_graphql(self.state, user, token, self._urls(req).web, body)
                )
                permission = ""
            else:
                ctx = Ctx(self.state, req, user, token, self._urls(req))
                resp, permission = wrap(self.routes, ctx, path)
            if token.permissions is not None and permission:
                base["X-Accepted-GitHub-Permissions"] = accepted_header(permission)
            resp = self._conditional(req, resp, user.id)
            if resp.status != 304:
                window.used += 1
            resp.headers.update(base)
            resp.headers.update(_rate_headers(window, resource))
            return resp

    def _conditional(self, req: Request, resp: Response, user_id: int) -> Response:
        if req.method != "GET" or resp.status != 200 or resp.stream is not None:
            return resp
        tag = etag(resp.body, user_id)
        resp.headers.update(
            ETag=tag,
            **{
                "Cache-Control": "private, max-age=60, s-maxage=60",
                "Vary": "Accept, Authorization, Cookie, X-GitHub-OTP",
            },
        )
        wanted = [t.strip() for t in req.headers.get("if-none-match", "").split(",")]
        if tag in wanted or tag.removeprefix("W/") in wanted or "*" in wanted:
            return Response(
                status=304, headers={"ETag": tag, "Cache-Control": resp.headers["Cache-Control"]}
            )
        return resp

    def _rate_limit_answer(
        self, user: Account, window: RateWindow, base: dict[str, str]
    ) -> Response:
        def entry(w: RateWindow, resource: str) -> dict[str, Any]:
            return {
                "limit": w.limit,
                "used": w.used,
                "remaining": w.remaining,
                "reset": int(w.reset),
                "resource": resource,
            }

        resources = {r: entry(self.state.rate(user, r), r) for r in ("core", "graphql", "search")}
        resp = Response.json({"resources": resources, "rate": resources["core"]})
        resp.headers.update(base)
        resp.headers.update(_rate_headers(window, "core"))
        return resp

    def _primary_limited(
        self, user: Account, window: RateWindow, request_id: str, base: dict[str, str]
    ) -> Response:
        message = (
            f"API rate limit exceeded for user ID {user.id}. If you reach out to GitHub Support "
            f"for help, please include the request ID {request_id}."
        )
        body = {
            "message": message,
            "documentation_url": RATE_DOCS,
            "status": str(self.rate_limit_status),
        }
        resp = Response.json(body, status=self.rate_limit_status, headers=base)
        resp.headers.update(_rate_headers(window, "core"))
        return resp

    def fault_response(self, fault: Fault, req: Request) -> Response:
        """GitHub's error shapes. Kinds beyond httpbase's: ``primary_rate_limit``
        (``status`` 403 or 429, ``X-RateLimit-Remaining: 0``, reset in ``seconds``) and
        ``secondary_rate_limit`` (403 or 429 with ``Retry-After: seconds``; ``seconds`` 0
        leaves the header out, as GitHub sometimes does)."""
        request_id = self._request_id()
        status = fault.status if fault.status in (403, 429) else 403
        headers = {"X-GitHub-Request-Id": request_id}
        if fault.kind == "primary_rate_limit":
            reset = int(time.time() + (fault.seconds or 1.0)) + 1
            message = (
                f"API rate limit exceeded for user ID 1. If you reach out to GitHub "
                f"Support for help, please include the request ID {request_id}."
            )
            headers.update(
                {
                    "X-RateLimit-Limit": "5000",
                    "X-RateLimit-Remaining": "0",
                    "X-RateLimit-Used": "5000",
                    "X-RateLimit-Reset": str(reset),
                    "X-RateLimit-Resource": "core",
                }
            )
        elif fault.kind == "secondary_rate_limit":
            message = (
                "You have exceeded a secondary rate limit. Please wait a few minutes "
                "before you try again. If you reach out to GitHub Support for help, "
                f"please include the request ID {request_id}."
            )
            if fault.seconds:
                headers["Retry-After"] = str(max(1, round(fault.seconds)))
        else:
            status = fault.status
            try:
                message = HTTPStatus(status).phrase
            except ValueError:
                message = "Error"
        if isinstance(fault.body, str) and fault.body.lstrip().startswith("<"):
            # what a proxy in front of GitHub answers (a unicorn page), not GitHub's JSON
            resp = Response.text(fault.body, status=status, headers={"Content-Type": "text/html"})
        else:
            body = (
                fault.body
                if fault.body is not None
                else {"message": message, "documentation_url": DOCS, "status": str(status)}
            )
            resp = Response.json(body, status=status)
        resp.headers.update(headers)
        resp.headers.update(fault.headers)
        return resp

    def _blob(self, req: Request) -> Response:
        _, _, kind, name = req.path.split("/", 3)
        token = name.rsplit(".", 1)[0]
        with self.state.lock:
            found = self.state.blobs.get(token)
            if found is None or found[0] != kind or found[2] < time.time():
                return Response.text("The signed URL has expired or is invalid.", status=403)
            if kind == "job-logs":
                for run in self.state.runs.values():
                    for job in run.jobs:
                        if job.id == found[1]:
                            return Response.text("".join(job.log))
                return Response.text("not found", status=404)
            run = self.state.runs[found[1]]
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as archive:
                for n, job in enumerate(run.current_jobs()):
                    archive.writestr(f"{n}_{job.name}.txt", "".join(job.log))
                    for step in job.steps:
                        archive.writestr(f"{job.name}/{step.number}_{step.name}.txt", "")
            return Response(
                status=200, body=buffer.getvalue(), headers={"Content-Type": "application/zip"}
            )

    # -- control and state ------------------------------------------------------------------
    def control(self, action: str, body: dict[str, Any]) -> Any:
        handler = getattr(self.controls, f"ctl_{action}", None) or getattr(
            self.humans, f"ctl_{action}", None
        )
        if handler is None:
            return super().control(action, body)
        if action == "wait_for_runs":
            return handler(**body)  # must not hold the lock the runner needs
        with self.state.lock:
            return handler(**body)

    def snapshot(self) -> dict[str, Any]:
        with self.state.lock:
            return {**self.humans.snapshot(), "requests": len(self.requests)}


def _rate_headers(window: RateWindow, resource: str) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": str(window.limit),
        "X-RateLimit-Remaining": str(window.remaining),
        "X-RateLimit-Reset": str(int(window.reset)),
        "X-RateLimit-Used": str(window.used),
        "X-RateLimit-Resource": resource,
    }
