"""HTTP plumbing of the GitHub emulator's REST API: the per-request context, routes with the
permission each needs, page/per_page pagination with GitHub's ``Link`` header, conditional
requests (``ETag`` → ``304 Not Modified``) and the headers every answer carries.

Facts honoured (docs.github.com/rest: "Using pagination", "Best practices", "Rate limits",
"Troubleshooting"): ``per_page`` defaults to 30, at most 100; ``Link`` has ``prev``/``first``
only past page 1 and ``next``/``last`` only before the last page; a 304 for an
``If-None-Match`` that matches is not counted against the primary rate limit; a fine-grained
token without the permission gets 403 "Resource not accessible by personal access token"
with ``X-Accepted-GitHub-Permissions``; a classic token's scopes come back in
``X-OAuth-Scopes``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from urllib.parse import urlencode

from harness_cli.sandbox import routing
from harness_cli.sandbox.github_model import Account, Repo, Token, not_found, parse_iso
from harness_cli.sandbox.github_render import Urls
from harness_cli.sandbox.github_state import GitHubState
from harness_cli.sandbox.httpbase import Request, Response
from harness_cli.sandbox.routing import ApiError

__all__ = ["DOCS", "Ctx", "Endpoint", "Handler", "Route", "error", "etag", "paginate", "wrap"]

DOCS = "https://docs.github.com/rest"
LEVELS = {"read": 1, "write": 2}


def error(status: int, message: str, **extra: Any) -> ApiError:
    return ApiError(
        status, {"message": message, "documentation_url": DOCS, "status": str(status), **extra}
    )


@dataclass
class Ctx:
    """One authenticated REST request as the handlers see it."""

    state: GitHubState
    req: Request
    user: Account
    token: Token
    urls: Urls
    params: dict[str, str] = field(default_factory=dict)

    def repo(self, role: str = "read") -> Repo:
        """The repository in the path; a private one its user cannot see is a 404, as is any
        private repository for a classic token without the ``repo`` scope."""
        repo = self.state.repo(self.params["owner"], self.params["repo"])
        hidden = repo.private and (
            not repo.can(self.user.id, "read")
            or (self.token.scopes is not None and "repo" not in self.token.scopes)
        )
        if hidden:
            raise not_found()
        if not repo.can(self.user.id, role):
            raise error(403, f"Must have {role} access to repository")
        return repo

    def body(self) -> dict[str, Any]:
        data = self.req.json_body()
        return data if isinstance(data, dict) else {}

    def arg(self, name: str) -> str | None:
        return self.req.arg(name)

    def number(self, name: str = "number") -> int:
        try:
            return int(self.params[name])
        except ValueError:
            raise not_found() from None

    def since(self, name: str = "since") -> float | None:
        text = self.arg(name)
        if not text:
            return None
        try:
            return parse_iso(text)
        except ValueError:
            raise error(422, f"Invalid value for parameter '{name}'") from None


Handler = Callable[[Ctx], Response]


class Endpoint(NamedTuple):
    handler: Handler
    permission: str
    """``<permission>:<read|write>`` a fine-grained token needs (X-Accepted-GitHub-Permissions)."""


Route = routing.Route[Endpoint]


def route(method: str, template: str, handler: Handler, permission: str) -> Route:
    return routing.Route.of(method, template, Endpoint(handler, permission))


def allowed(token: Token, permission: str) -> bool:
    if token.permissions is None or not permission:
        return True
    name, _, level = permission.partition(":")
    if name == "metadata":  # every fine-grained token may read metadata (GitHub makes it so)
        return level == "read"
    return LEVELS.get(token.permissions.get(name, ""), 0) >= LEVELS[level]


def accepted_header(permission: str) -> str:
    name, _, level = permission.partition(":")
    return f"{name}={level}" if name else ""


def wrap(routes: Sequence[Route], ctx: Ctx, path: str) -> tuple[Response, str]:
    """Dispatch to the matching route; returns the answer and the permission it needed."""
    found = routing.find_route(routes, ctx.req.method, path)
    if found is None:
        return Response.json(error(404, "Not Found").body, status=404), ""
    chosen, ctx.params = found
    endpoint = chosen.handler
    try:
        if not allowed(ctx.token, endpoint.permission):
            raise error(403, "Resource not accessible by personal access token")
        return endpoint.handler(ctx), endpoint.permission
    except ApiError as err:
        return Response.json(err.body, status=err.status, headers=err.headers), endpoint.permission


def etag(body: bytes, user_id: int) -> str:
    # Weak, and varying with the caller (GitHub sends Vary: Authorization).
    return 'W/"' + hashlib.sha256(body + str(user_id).encode()).hexdigest()[:40] + '"'


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text else default
    except ValueError:
        return default


def page_of(ctx: Ctx, items: Sequence[Any]) -> tuple[Sequence[Any], dict[str, str]]:
    """The requested page of ``items`` and the ``Link`` header leading to the others."""
    page = max(1, _int(ctx.arg("page"), 1))
    per_page = min(100, max(1, _int(ctx.arg("per_page"), 30)))
    pages = max(1, math.ceil(len(items) / per_page))

    def link(n: int) -> str:
        query = {k: v for k, v in ctx.req.query.items() if k != "page"}
        query["page"] = [str(n)]
        return f"{ctx.urls.web}{ctx.req.path}?{urlencode(query, doseq=True)}"

    rels: list[tuple[str, int]] = []
    if page > 1:
        rels += [("prev", min(page - 1, pages)), ("first", 1)]
    if page < pages:
        rels += [("next", page + 1), ("last", pages)]
    headers = {"Link": ", ".join(f'<{link(n)}>; rel="{rel}"' for rel, n in rels)} if rels else {}
    return items[(page - 1) * per_page : page * per_page], headers


def paginate(
    ctx: Ctx, items: Sequence[Any], render: Callable[[Any], Any], *, key: str | None = None
) -> Response:
    """A page as a JSON list, or as ``{"total_count": N, key: [...]}`` for the endpoints that
    wrap theirs (check runs, workflow runs, jobs, workflows)."""
    chunk, headers = page_of(ctx, items)
    rendered = [render(item) for item in chunk]
    body: Any = rendered if key is None else {"total_count": len(items), key: rendered}
    return Response.json(body, headers=headers)
