"""A role played live inside a scripted eval trial: the Anthropic emulator hands the requests
of the roles named live (an eval case's ``models: {investigator: live}``) to the real API, and
answers the rest from the script. The request goes on unchanged, with the real key in place of
the sandbox's; the real answer (JSON or the SSE stream, read whole) comes back as it was."""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass

from harness_cli.sandbox.httpbase import Request, Response

PASSED_HEADERS = ("anthropic-version", "anthropic-beta", "content-type", "accept")
"""The request headers the real API needs; the sandbox's key is replaced, nothing else passes."""


@dataclass(frozen=True)
class Upstream:
    url: str
    """The real API's base URL (``https://api.anthropic.com``, or ANTHROPIC_BASE_URL's)."""
    api_key: str
    roles: frozenset[str]
    timeout_s: float = 600.0


def forward(upstream: Upstream, req: Request) -> Response:
    """``req`` (a ``POST /v1/messages``) sent to the real API; its answer, or a 502 that says
    why the real API could not be reached."""
    headers = {k: v for k, v in req.headers.items() if k.lower() in PASSED_HEADERS}
    headers["x-api-key"] = upstream.api_key
    out = urllib.request.Request(
        upstream.url.rstrip("/") + "/v1/messages", data=req.body, headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(out, timeout=upstream.timeout_s) as answer:
            return Response(answer.status, answer.read(), _kept(answer.headers.items()))
    except urllib.error.HTTPError as exc:
        return Response(exc.code, exc.read(), _kept(exc.headers.items()))
    except OSError as exc:
        body = ('{"type":"error","error":{"type":"api_error","message":"the live model at '
                f'{upstream.url} cannot be reached: {type(exc).__name__}"}}}}')  # fmt: skip
        return Response(502, body.encode(), {"Content-Type": "application/json"})


def _kept(items: object) -> dict[str, str]:
    skip = {"content-length", "transfer-encoding", "connection", "content-encoding"}
    return {k: v for k, v in items if k.lower() not in skip}  # type: ignore[attr-defined]
