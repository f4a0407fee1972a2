"""Route tables of the REST emulators (GitLab, GitHub): path templates with ``:name`` segments
and the error every handler may raise to answer in its service's shape."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import unquote

__all__ = ["ApiError", "Route", "find_route"]

H = TypeVar("H")


class ApiError(Exception):
    """An error answer in the service's shape (status, JSON body, extra headers)."""

    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"{status}: {body}")
        self.status = status
        self.body = body
        self.headers = headers or {}


@dataclass(frozen=True)
class Route(Generic[H]):
    method: str
    pattern: re.Pattern[str]
    handler: H

    @classmethod
    def of(cls, method: str, template: str, handler: H) -> Route[H]:
        # ":name" captures one path segment; ":name+" captures the rest (branch names may
        # contain encoded slashes and, from other clients, raw ones).
        regex = re.sub(r":(\w+)\+", r"(?P<\1>.+)", template)
        regex = re.sub(r":(\w+)", r"(?P<\1>[^/]+)", regex)
        return cls(method, re.compile(regex), handler)


def find_route(
    routes: Sequence[Route[H]], method: str, path: str
) -> tuple[Route[H], dict[str, str]] | None:
    """The first route for ``method`` whose template matches all of ``path``, with its
    (URL-decoded) parameters."""
    for route in routes:
        match = route.pattern.fullmatch(path)
        if match and route.method == method:
            return route, {k: unquote(v) for k, v in match.groupdict().items()}
    return None
