"""HTTP plumbing of the GitLab emulator: the per-request context, the route table, offset
pagination with GitLab's headers, and the rate-limit answer.

python-gitlab follows only ``Link: <…>; rel="next"`` and warns when that URL's base differs
from its own, so links are built from the request's ``Host`` (API-FACTS §2). Above 10 000 rows
GitLab omits ``x-total``, ``x-total-pages`` and ``rel="last"``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any
from urllib.parse import urlencode

from harness_cli.sandbox import routing
from harness_cli.sandbox.gitlab_model import Project, User, parse_iso
from harness_cli.sandbox.gitlab_state import ApiError, GitLabState
from harness_cli.sandbox.httpbase import Request, Response

__all__ = [
    "TOTALS_LIMIT",
    "Ctx",
    "Handler",
    "Route",
    "dispatch",
    "paginate",
    "rate_limited",
    "sort_items",
]

TOTALS_LIMIT = 10_000
RATE_LIMIT_MESSAGE = "This endpoint has been requested too many times. Try again later."


@dataclass
class Ctx:
    """One authenticated API request as the handlers see it."""

    state: GitLabState
    req: Request
    user: User
    base: str
    params: dict[str, str] = field(default_factory=dict)

    def arg(self, name: str) -> str | None:
        return self.req.arg(name)

    def project(self) -> Project:
        """The project named in the path, with pushes since the last look taken into account."""
        project = self.state.project(self.params["pid"])
        if project.access_level(self.user.id) <= 0:  # a private project its user cannot see
            raise ApiError(404, {"message": "404 Project Not Found"})
        self.state.sync(project)
        return project

    def args(self) -> dict[str, Any]:
        """Body parameters with their JSON types kept (labels lists, position objects)."""
        data = self.req.json_body()
        merged: dict[str, Any] = dict(self.req.form())
        if isinstance(data, dict):
            merged.update(data)
        for key, values in self.req.query.items():
            merged.setdefault(key.removesuffix("[]"), values if key.endswith("[]") else values[0])
        return merged

    def int_param(self, name: str) -> int:
        try:
            return int(self.params[name])
        except ValueError:
            raise ApiError(404, {"error": "404 Not Found"}) from None

    def time_arg(self, name: str) -> float | None:
        text = self.arg(name)
        if not text:
            return None
        try:
            return parse_iso(text)
        except ValueError:
            raise ApiError(400, {"error": f"{name} is invalid"}) from None


Handler = Callable[[Ctx], Response]


Route = routing.Route[Handler]


def dispatch(routes: Sequence[Route], ctx: Ctx, path: str) -> Response:
    found = routing.find_route(routes, ctx.req.method, path)
    if found is None:
        return Response.json({"error": "404 Not Found"}, status=404)
    route, ctx.params = found
    try:
        return route.handler(ctx)
    except ApiError as err:
        return Response.json(err.body, status=err.status, headers=err.headers)


def sort_items(
    items: list[Any], ctx: Ctx, keys: dict[str, Callable[[Any], Any]], default: str
) -> list[Any]:
    """Order by ``order_by`` (one of ``keys``) and ``sort`` (asc|desc, default desc)."""
    order_by = ctx.arg("order_by") or default
    if order_by not in keys:
        raise ApiError(400, {"error": "order_by does not have a valid value"})
    sort = ctx.arg("sort") or "desc"
    if sort not in ("asc", "desc"):
        raise ApiError(400, {"error": "sort does not have a valid value"})
    key = keys[order_by]
    return sorted(items, key=lambda item: (key(item), item.id), reverse=sort == "desc")


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text else default
    except ValueError:
        return default


def paginate(ctx: Ctx, items: Sequence[Any], render: Callable[[Any], Any]) -> Response:
    page = max(1, _int(ctx.arg("page"), 1))
    per_page = min(100, max(1, _int(ctx.arg("per_page"), 20)))
    total = len(items)
    pages = max(1, math.ceil(total / per_page))
    chunk = [render(item) for item in items[(page - 1) * per_page : page * per_page]]

    def link(n: int) -> str:
        query = {k: v for k, v in ctx.req.query.items() if k not in ("page", "per_page")}
        query["page"], query["per_page"] = [str(n)], [str(per_page)]
        return f"{ctx.base}{ctx.req.path}?{urlencode(query, doseq=True)}"

    rels: list[tuple[str, int]] = []
    if page > 1:
        rels.append(("prev", min(page - 1, pages)))
    if page < pages:
        rels.append(("next", page + 1))
    rels.append(("first", 1))
    headers = {
        "x-page": str(page),
        "x-per-page": str(per_page),
        "x-next-page": str(page + 1) if page < pages else "",
        "x-prev-page": str(page - 1) if page > 1 else "",
    }
    if total <= TOTALS_LIMIT:
        rels.append(("last", pages))
        headers["x-total"] = str(total)
        headers["x-total-pages"] = str(pages)
    headers["Link"] = ", ".join(f'<{link(n)}>; rel="{rel}"' for rel, n in rels)
    return Response.json(chunk, headers=headers)


def rate_limited(seconds: float, *, retry_after: bool, limit: int = 600) -> Response:
    """GitLab's 429: RateLimit-* headers always, ``Retry-After`` unless the variant without it
    is asked for (gitlab-org/gitlab#365728), in which case clients wait for RateLimit-Reset."""
    reset = math.ceil(time.time() + seconds)
    headers = {
        "RateLimit-Name": "throttle_authenticated_api",
        "RateLimit-Limit": str(limit),
        "RateLimit-Observed": str(limit + 1),
        "RateLimit-Remaining": "0",
        "RateLimit-Reset": str(reset),
        "RateLimit-ResetTime": formatdate(reset, usegmt=True),
    }
    if retry_after:
        headers["Retry-After"] = str(math.ceil(seconds))
    return Response.json({"message": {"error": RATE_LIMIT_MESSAGE}}, status=429, headers=headers)
