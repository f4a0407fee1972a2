"""The shared frame of the sandbox emulators: a threaded HTTP server on 127.0.0.1, a record of
every request, a queue of injected faults, and a small control API under ``/_control/``.

Each emulator (Slack, GitLab, Anthropic) subclasses :class:`Emulator` and implements
``route()``. The real SDKs talk to it over HTTP, unchanged; tests drive the control API either
in-process (``emu.control(action, body)``) or over HTTP (``POST /_control/<action>``).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "Emulator",
    "Fault",
    "RecordedRequest",
    "Request",
    "Response",
]


@dataclass
class Request:
    """One parsed HTTP request as an emulator sees it."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def arg(self, name: str, default: str | None = None) -> str | None:
        """A parameter from the query string, a form body or a JSON body (in that order)."""
        if name in self.query:
            return self.query[name][0]
        form = self.form()
        if name in form:
            return form[name]
        data = self.json_body()
        if isinstance(data, dict) and name in data:
            value = data[name]
            if isinstance(value, bool):
                return "true" if value else "false"
            return value if isinstance(value, str) else json.dumps(value)
        return default

    def json_body(self) -> Any:
        ctype = self.headers.get("content-type", "")
        if not self.body or "json" not in ctype:
            return None
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def form(self) -> dict[str, str]:
        ctype = self.headers.get("content-type", "")
        if not self.body or "application/x-www-form-urlencoded" not in ctype:
            return {}
        parsed = parse_qs(self.body.decode("utf-8", "replace"), keep_blank_values=True)
        return {k: v[0] for k, v in parsed.items()}


@dataclass
class Response:
    """What an emulator answers. ``stream`` sends chunks as they come (SSE); ``upgrade`` takes
    over the raw socket after the headers (WebSocket); ``drop`` closes the socket unanswered."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    stream: Iterable[bytes] | None = None
    upgrade: Callable[[socket.socket, Any], None] | None = None
    drop: bool = False

    @classmethod
    def json(cls, obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
        hdrs = {"Content-Type": "application/json; charset=utf-8", **(headers or {})}
        return cls(status=status, body=json.dumps(obj).encode(), headers=hdrs)

    @classmethod
    def text(cls, text: str, status: int = 200, headers: dict[str, str] | None = None) -> Response:
        hdrs = {"Content-Type": "text/plain; charset=utf-8", **(headers or {})}
        return cls(status=status, body=text.encode(), headers=hdrs)


@dataclass
class RecordedRequest:
    """A request as recorded for assertions; ``status`` is what the emulator answered."""

    at: float
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    status: int = 0
    elapsed: float = 0.0
    """Seconds the emulator spent answering (headers ready; a stream's body not included)."""

    def json_body(self) -> Any:
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None


@dataclass
class Fault:
    """An injected misbehaviour, matched against incoming requests.

    ``kind``: ``status`` (answer ``status`` with ``body``/``headers``), ``drop`` (close the
    connection without a reply), ``delay`` (sleep ``seconds`` then serve normally), ``lost``
    (serve the request — a post is made — then close the connection without the answer: the
    client cannot know whether it happened), ``hang`` (answer nothing for ``seconds``, or until
    the emulator stops when 0, then close: a client without a read timeout hangs).
    Emulators may add kinds of their own (GitHub's rate limits), answered by
    :meth:`Emulator.fault_response`.
    ``match`` is a substring of the path (e.g. ``chat.postMessage``, ``/merge_requests``);
    ``method`` optionally restricts it to one HTTP method; ``where`` to requests whose
    parameters contain these values (e.g. ``{"channel": "C1"}``). ``times`` counts down; ``-1``
    never runs out.
    """

    kind: str
    match: str = ""
    status: int = 500
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    times: int = 1
    where: dict[str, str] = field(default_factory=dict)
    method: str = ""

    def matches(self, req: Request) -> bool:
        if self.match and self.match not in req.path:
            return False
        if self.method and self.method.upper() != req.method:
            return False
        return all(req.arg(k) == v for k, v in self.where.items())


class Emulator:
    """Base of every emulator: lifecycle, request log, faults, control API."""

    name = "emulator"

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.requests: list[RecordedRequest] = []
        self.faults: list[Fault] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.halted = threading.Event()
        """Set by ``stop()``: a fault that stalls an answer waits on it, not on a bare sleep."""

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        emulator = self

        class Handler(_Handler):
            pass

        Handler.emulator = emulator
        self.halted.clear()
        server = _Server((host, port), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            # a short poll interval: stop() returns at once instead of after the default 0.5 s
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{self.name}-http",
            daemon=True,
        )
        self._thread.start()
        return self.url

    def stop(self) -> None:
        self.halted.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Emulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, f"{self.name} emulator is not started"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """Base URL of the server (no trailing slash)."""
        return f"http://127.0.0.1:{self.port}"

    # -- what subclasses provide -------------------------------------------------------------
    def route(self, req: Request) -> Response:
        raise NotImplementedError

    def control(self, action: str, body: dict[str, Any]) -> Any:
        """Test-facing actions; subclasses extend and fall back to this one."""
        if action == "fault":
            self.add_fault(Fault(**body))
            return {"ok": True}
        if action == "clear_faults":
            with self.lock:
                self.faults.clear()
            return {"ok": True}
        if action == "state":
            return self.snapshot()
        raise KeyError(action)

    def snapshot(self) -> dict[str, Any]:
        """The emulator's state as JSON (``demo --keep`` writes it to sandbox-state.json)."""
        return {"requests": len(self.requests)}

    # -- faults and records ------------------------------------------------------------------
    def add_fault(self, fault: Fault) -> None:
        with self.lock:
            self.faults.append(fault)

    def take_fault(self, req: Request) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.times != 0 and fault.matches(req):
                    if fault.times > 0:
                        fault.times -= 1
                    return fault
            self.faults = [f for f in self.faults if f.times != 0]
        return None

    def fault_response(self, fault: Fault, req: Request) -> Response:
        """How a ``status`` fault looks on the wire; emulators override for their error shape."""
        body = fault.body if fault.body is not None else {"error": f"injected {fault.status}"}
        return Response.json(body, status=fault.status, headers=dict(fault.headers))

    def busy_seconds(self) -> float:
        """Total time spent answering recorded requests (the demo's benchmark reads it)."""
        with self.lock:
            return sum(r.elapsed for r in self.requests)

    def recorded(self, match: str = "", method: str | None = None) -> list[RecordedRequest]:
        with self.lock:
            return [
                r
                for r in self.requests
                if match in r.path and (method is None or r.method == method)
            ]

    def dispatch(self, req: Request) -> Response:
        if req.path.startswith("/_control/"):
            action = req.path[len("/_control/") :]
            try:
                result = self.control(action, req.json_body() or {})
            except KeyError:
                return Response.json({"ok": False, "error": f"unknown control {action}"}, 404)
            return Response.json(result)
        fault = self.take_fault(req)
        if fault is not None:
            if fault.kind == "drop":
                return Response(drop=True)
            if fault.kind == "lost":
                self.route(req)
                return Response(drop=True)
            if fault.kind == "hang":
                self.halted.wait(fault.seconds or None)
                return Response(drop=True)
            if fault.kind == "delay":
                time.sleep(fault.seconds)
            else:
                return self.fault_response(fault, req)
        return self.route(req)


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer (killed by a crash test, a timeout) is normal
        here; anything else is still printed."""
        import sys

        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    emulator: Emulator
    protocol_version = "HTTP/1.1"
    # Headers and body leave in two writes: with Nagle's algorithm on, a keep-alive client
    # (requests, httpx) waits out the peer's delayed ACK, ~40 ms per call.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the stdlib's stderr access log; requests are recorded instead."""

    def _serve(self) -> None:
        parts = urlsplit(self.path)
        body = self._read_body()
        req = Request(
            method=self.command,
            path=parts.path,
            query=parse_qs(parts.query, keep_blank_values=True),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        record = RecordedRequest(
            at=time.time(),
            method=req.method,
            path=req.path,
            query=req.query,
            headers=req.headers,
            body=body,
        )
        emu = self.emulator
        if not req.path.startswith("/_control/"):
            with emu.lock:
                emu.requests.append(record)
        try:
            resp = emu.dispatch(req)
        except Exception as exc:  # noqa: BLE001 - an emulator bug must answer 500, not hang
            resp = Response.json({"error": f"emulator error: {exc!r}"}, status=500)
        record.status = resp.status
        record.elapsed = time.time() - record.at
        if resp.drop:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.send_response(resp.status)
        for key, value in resp.headers.items():
            self.send_header(key, value)
        if resp.upgrade is not None:
            self.end_headers()
            self.wfile.flush()
            self.close_connection = True
            resp.upgrade(self.connection, self.rfile)
            return
        if resp.stream is not None:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self._write_chunks(resp.stream)
            return
        self.send_header("Content-Length", str(len(resp.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(resp.body)

    def _read_body(self) -> bytes:
        """The request body; git sends large pushes with ``Transfer-Encoding: chunked``."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _write_chunks(self, chunks: Iterable[bytes]) -> None:
        iterator: Iterator[bytes] = iter(chunks)
        try:
            for chunk in iterator:
                if not chunk:
                    continue
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _serve
