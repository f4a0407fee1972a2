"""GitLab misbehaving, turned into typed errors inside a time budget (issue #17, point 7).

What the live GitLab (and the proxy in front of it) does, and what the harness makes of it:

- **5xx storms and dropped connections.** python-gitlab retries them (``retry_transient_errors``)
  up to ten times with a doubling backoff — 102 s for one call, so one mr-monitor cycle took
  103 s against its 60 s budget. :class:`Bounds` sees every HTTP request python-gitlab makes,
  its own retries included, and stops the retries after ``max_retries`` in a row, or as soon as
  the next wait would outlast the run's deadline; no request starts past the deadline, and none
  may take longer than what is left of it.
- **429.** python-gitlab honours Retry-After / RateLimit-Reset; a wait that would outlast the
  deadline ends the call at once instead of sleeping through it.
- **Answers that are not what the API documents** — an MR list answered as an object, an HTML
  502 page, an MR without an ``iid`` — are a :class:`ServiceError` that says so in a few words
  (:func:`guard`), never a traceback and a crash log.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

from harness_cli.errors import ServiceError

T = TypeVar("T")

TRANSIENT = frozenset({500, 502, 503, 504, *range(520, 531)})
"""The statuses python-gitlab retries with ``retry_transient_errors`` (API-FACTS §2)."""
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


class OverBudget(Exception):
    """Raised from inside python-gitlab's retry loop: the next wait or request would outlast
    the run's deadline, or the transient failures ran out of retries."""

    def __init__(self, message: str, status: int | None) -> None:
        super().__init__(message)
        self.status = status


class Bounds:
    """Wraps the HTTP session python-gitlab sends every request through."""

    def __init__(self, *, timeout: float, max_retries: int) -> None:
        self.timeout = timeout
        self.max_retries = max_retries
        self.deadline: float | None = None
        self.failures = 0
        """Transient failures in a row (5xx, connection errors); any other answer resets it."""

    def wrap(self, send: Callable[..., Any]) -> Callable[..., Any]:
        def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            import requests

            where = f"{method.upper()} {urlsplit(url).path}"
            if self.deadline is not None:
                left = self.deadline - time.monotonic()
                if left <= 0:
                    raise OverBudget(f"no time left in this run's budget for {where}", None)
                kwargs["timeout"] = min(kwargs.get("timeout") or self.timeout, max(left, 0.1))
            try:
                response = send(method, url, *args, **kwargs)
            except requests.RequestException as exc:
                self._transient(f"{where}: {type(exc).__name__}", None, None)
                raise
            status = int(response.status_code)
            if status == 429:
                self._rate_limited(where, retry_after(response.headers))
            elif status in TRANSIENT:
                self._transient(f"{where}: {status}{_page(response)}", status, response.headers)
            else:
                self.failures = 0
            return response

        return request

    def _rate_limited(self, where: str, wait: float) -> None:
        if self.deadline is not None and time.monotonic() + wait > self.deadline:
            message = f"429 rate limited for {wait:g} s at {where}, past this run's budget"
            raise OverBudget(message, 429)

    def _transient(self, what: str, status: int | None, headers: Any) -> None:
        self.failures += 1
        wait = (retry_after(headers) if headers else 0.0) or 0.1 * 2 ** (self.failures - 1)
        if self.failures > self.max_retries:
            raise OverBudget(f"{what} {self.failures} times in a row; stopped retrying", status)
        if self.deadline is not None and time.monotonic() + wait > self.deadline:
            raise OverBudget(f"{what}; no time left in this run's budget to retry", status)


def _page(response: Any) -> str:
    """`` (an HTML page: 502 Bad Gateway)`` when a proxy answered instead of GitLab."""
    if "html" not in str(response.headers.get("Content-Type", "")).lower():
        return ""
    title = _TITLE.search(response.text[:4096])
    return f" (an HTML page: {' '.join(title.group(1).split())})" if title else " (an HTML page)"


def guard(fn: Callable[[], T], what: str) -> T:
    """Run one python-gitlab call (and the reading of its answer); every way it can go wrong
    becomes one :class:`ServiceError` line with the HTTP status on it."""
    import gitlab.exceptions

    try:
        return fn()
    except OverBudget as exc:
        hint = "the next run resumes where this one stopped"
        raise _error(f"GitLab: {exc}", exc.status, hint) from None
    except gitlab.exceptions.GitlabAuthenticationError:
        raise _error(
            "GitLab rejected GITLAB_TOKEN (401)", 401, "issue a new token with the api scope"
        ) from None
    except gitlab.exceptions.GitlabParsingError:
        raise _error(
            f"GitLab's answer to {what} is not JSON (a proxy page or a truncated reply?)",
            None,
            "check GITLAB_URL points at the GitLab API; the next run tries again",
        ) from None
    except gitlab.exceptions.GitlabError as exc:
        raise _error(describe(exc), exc.response_code, None) from None
    except OSError as exc:
        raise _error(f"GitLab unreachable: {exc}", None, "check GITLAB_URL") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        # e.g. an MR list answered as an object, an MR without iid: not what the API documents
        raise _error(
            f"GitLab's answer to {what} is not what its API documents "
            f"({type(exc).__name__}: {str(exc)[:120]})",
            None,
            "a proxy or an incompatible GitLab version? the next run tries again",
        ) from None


def _error(message: str, status: int | None, hint: str | None) -> ServiceError:
    error = ServiceError(message, hint=hint)
    error.status = status
    return error


def describe(exc: Any) -> str:
    """``GitLab: 502 <message>`` in one short line; an HTML error page is named, not dumped."""
    message = exc.error_message
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    text = str(message)
    if text.lstrip().startswith("<"):
        title = _TITLE.search(text)
        named = f" ({' '.join(title.group(1).split())})" if title else ""
        text = f"an HTML page{named} instead of GitLab's JSON (a proxy in front of GitLab?)"
    text = " ".join(text.split())
    text = text if len(text) <= 200 else text[:199] + "…"
    code = exc.response_code
    return f"GitLab: {code} {text}" if code else f"GitLab: {text}"


def retry_after(headers: Any) -> float:
    """Seconds GitLab asks to wait: Retry-After, else RateLimit-Reset (a unix time)."""
    value = headers.get("Retry-After")
    if value:
        try:
            return float(value)
        except ValueError:
            return 0.0
    reset = headers.get("RateLimit-Reset")
    try:
        return max(0.0, float(reset) - time.time()) if reset else 0.0
    except ValueError:
        return 0.0
