"""Git's smart HTTP protocol for the sandbox forges: ``git http-backend`` (git's own CGI) run
per request, so a real ``git clone``/``fetch``/``push`` over ``http://`` behaves exactly as
against a forge — protocol v2, gzip-encoded requests, pre-receive hooks whose refusals reach
the client as ``remote:`` lines and ``! [remote rejected]``.

Authentication stays with the emulator: it decides who the caller is, then calls
:func:`serve` with ``remote_user`` set (receive-pack refuses anonymous pushes unless told) and
with whatever its hooks need in ``hook_env``.
"""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

from harness_cli.sandbox.httpbase import Request, Response

__all__ = ["GIT_SERVICES", "basic_credentials", "is_git_path", "serve", "split_git_path"]

GIT_SERVICES = ("info/refs", "git-upload-pack", "git-receive-pack", "HEAD")
"""What a smart-HTTP client asks for below ``<repo>.git/``."""


def is_git_path(path: str) -> bool:
    return split_git_path(path) is not None


def split_git_path(path: str) -> tuple[str, str] | None:
    """``/owner/name.git/info/refs`` → (``owner/name``, ``info/refs``); None if not git's."""
    head, sep, service = path.lstrip("/").partition(".git/")
    if not sep or service not in GIT_SERVICES:
        return None
    return head, service


def basic_credentials(req: Request) -> tuple[str, str] | None:
    """(user, password) from ``Authorization: Basic``, as git sends the credentials of
    ``http://user:token@host/…`` or of an ``http.extraheader``."""
    header = req.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, _, password = base64.b64decode(value.strip()).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return user, password


def serve(
    repo: Path,
    service: str,
    req: Request,
    *,
    remote_user: str | None,
    hook_env: dict[str, str] | None = None,
    timeout: float = 120.0,
) -> Response:
    """Answer one smart-HTTP request for the bare repository ``repo`` via git http-backend."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(repo),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_PROJECT_ROOT": str(repo.parent),
        "GIT_HTTP_EXPORT_ALL": "1",
        "PATH_INFO": f"/{repo.name}/{service}",
        "REQUEST_METHOD": req.method,
        "QUERY_STRING": "&".join(f"{k}={v}" for k, vs in req.query.items() for v in vs),
        "CONTENT_TYPE": req.headers.get("content-type", ""),
        "CONTENT_LENGTH": str(len(req.body)),
        "REMOTE_ADDR": "127.0.0.1",
        **(hook_env or {}),
    }
    if remote_user:
        env["REMOTE_USER"] = remote_user
    for header in ("content-encoding", "git-protocol"):
        if header in req.headers:
            env["HTTP_" + header.upper().replace("-", "_")] = req.headers[header]
    if "git-protocol" in req.headers:
        env["GIT_PROTOCOL"] = req.headers["git-protocol"]
    proc = subprocess.run(
        ["git", "http-backend"],
        input=req.body,
        env=env,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    return _cgi_response(proc.stdout, proc.stderr)


def _cgi_response(out: bytes, err: bytes) -> Response:
    head, sep, body = out.partition(b"\r\n\r\n")
    if not sep:
        head, sep, body = out.partition(b"\n\n")
    if not sep:
        message = err.decode("utf-8", "replace").strip() or "git http-backend gave no answer"
        return Response.text(message + "\n", status=500)
    status = 200
    headers: dict[str, str] = {}
    for line in head.decode("latin-1").splitlines():
        key, _, value = line.partition(":")
        if key.lower() == "status":
            status = int(value.strip().split()[0])
        elif key:
            headers[key.strip()] = value.strip()
    return Response(status=status, body=body, headers=headers)
