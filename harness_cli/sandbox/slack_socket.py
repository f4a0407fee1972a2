"""Socket Mode for the Slack emulator: a minimal RFC 6455 WebSocket server on the socket that
``Response.upgrade`` hands over, and the hub that turns posted messages into
``events_api`` envelopes, waits for acks and redelivers the unacked ones.

Delivery semantics, as close to Slack's as we know them:

* Each envelope goes to ONE open connection (round-robin), as Slack spreads events over an
  app's connections; it is not broadcast.
* An event published while no socket is connected is dropped, not queued: Slack gives up
  on it, and the harness's poller is the safety net.
* An envelope not acked within ``ack_timeout`` seconds is redelivered with
  ``retry_attempt`` + 1 and ``retry_reason: "timeout"`` (same ``event_id``, new
  ``envelope_id``), up to ``max_retries`` times. A retry that finds no connection is
  skipped but still counts, so a client that reconnects in time gets the next one.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import itertools
import json
import socket
import struct
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from harness_cli.sandbox.httpbase import Request, Response

__all__ = [
    "AckRecord",
    "SocketModeHub",
    "WebSocket",
    "accept_key",
    "encode_frame",
]

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


def accept_key(key: str) -> str:
    """The ``Sec-WebSocket-Accept`` value for a client's ``Sec-WebSocket-Key`` (RFC 6455 §4.2.2)."""
    return base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()


def encode_frame(opcode: int, payload: bytes, *, mask: bytes | None = None) -> bytes:
    """One final frame. Servers send unmasked frames; pass ``mask`` to build a client's."""
    head = bytes([0x80 | opcode])
    bit = 0x80 if mask is not None else 0
    n = len(payload)
    if n < 126:
        head += bytes([bit | n])
    elif n < 1 << 16:
        head += bytes([bit | 126]) + struct.pack("!H", n)
    else:
        head += bytes([bit | 127]) + struct.pack("!Q", n)
    if mask is None:
        return head + payload
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


class _Closed(Exception):
    """The peer went away (EOF or a socket error) in the middle of a read."""


class WebSocket:
    """The server end of one connection. Reads happen on the handler thread; sends may come
    from any thread and are serialised by a lock."""

    def __init__(self, sock: socket.socket, rfile: BinaryIO) -> None:
        self.sock = sock
        self.rfile = rfile
        self.id = uuid.uuid4().hex[:12]
        self.opened_at = time.monotonic()
        self.closed = False
        self._send_lock = threading.Lock()

    def send(self, opcode: int, payload: bytes) -> bool:
        with self._send_lock:
            if self.closed:
                return False
            try:
                self.sock.sendall(encode_frame(opcode, payload))
                return True
            except OSError:
                self.closed = True
                return False

    def send_json(self, obj: Any) -> bool:
        return self.send(OP_TEXT, json.dumps(obj).encode())

    def _read_exact(self, n: int) -> bytes:
        try:
            data = self.rfile.read(n) if n else b""
        except (OSError, ValueError):
            raise _Closed from None
        if len(data) < n:
            raise _Closed
        return data

    def read_message(self) -> tuple[int, bytes]:
        """The next control frame or complete (reassembled) data message; raises _Closed."""
        opcode, buffer = -1, b""
        while True:
            b1, b2 = self._read_exact(2)
            fin, op, masked, n = b1 & 0x80, b1 & 0x0F, b2 & 0x80, b2 & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", self._read_exact(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", self._read_exact(8))
            if not masked:
                # RFC 6455 §5.1: a server must close on an unmasked client frame.
                self.close(1002, "client frames must be masked")
                raise _Closed
            mask = self._read_exact(4)
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self._read_exact(n)))
            if op >= OP_CLOSE:  # control frames may interleave with fragments
                return op, data
            if op != OP_CONT:
                opcode = op
            buffer += data
            if fin:
                return opcode, buffer

    def close(self, code: int = 1000, reason: str = "") -> None:
        """A clean close: a close frame, then the TCP connection."""
        self.send(OP_CLOSE, struct.pack("!H", code) + reason.encode())
        self.abort()

    def abort(self) -> None:
        """Drop the TCP connection without a close frame, as a failing network would."""
        with self._send_lock:
            self.closed = True
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                self.sock.close()


@dataclass
class AckRecord:
    """One ack a client sent: which envelope, for which delivery attempt, how fast."""

    envelope_id: str
    event_id: str | None
    retry_attempt: int | None
    latency: float | None
    payload: Any = None


@dataclass
class _Pending:
    event_id: str
    payload: dict[str, Any]
    attempt: int = 0
    envelope_ids: list[str] = field(default_factory=list)
    sent_at: dict[str, float] = field(default_factory=dict)
    timer: threading.Timer | None = None
    acked: bool = False


class SocketModeHub:
    """Connections, tickets, envelopes and acks of the emulated Socket Mode endpoint."""

    def __init__(
        self,
        *,
        app_id: str = "A0HARNESS",
        ack_timeout: float = 3.0,
        max_retries: int = 3,
        disconnect_grace: float = 2.0,
    ) -> None:
        self.app_id = app_id
        self.ack_timeout = ack_timeout
        self.max_retries = max_retries
        self.disconnect_grace = disconnect_grace
        self.lock = threading.Lock()
        self.tickets: set[str] = set()
        self.connections: list[WebSocket] = []
        self.connects = 0
        self.acks: list[AckRecord] = []
        self.deliveries: list[dict[str, Any]] = []  # every envelope sent, with its socket id
        self.undelivered: list[dict[str, Any]] = []  # events published with no socket open
        self._pending: dict[str, _Pending] = {}  # by event_id
        self._by_envelope: dict[str, _Pending] = {}
        self._rr = itertools.count()
        self._timers: list[threading.Timer] = []

    # -- connecting -------------------------------------------------------------------------
    def new_ticket(self) -> str:
        ticket = str(uuid.uuid4())
        with self.lock:
            self.tickets.add(ticket)
        return ticket

    def upgrade(self, req: Request) -> Response:
        """Answer a ``GET /link/?ticket=…`` handshake: 101 and a takeover, or a plain error."""
        headers = req.headers
        if req.method != "GET" or headers.get("upgrade", "").lower() != "websocket":
            return Response.text("expected a WebSocket upgrade", status=400)
        if "upgrade" not in headers.get("connection", "").lower():
            return Response.text("expected Connection: Upgrade", status=400)
        if headers.get("sec-websocket-version") != "13":
            return Response.text("unsupported version", 426, {"Sec-WebSocket-Version": "13"})
        key = headers.get("sec-websocket-key", "")
        if not key:
            return Response.text("missing Sec-WebSocket-Key", status=400)
        ticket = (req.query.get("ticket") or [""])[0]
        with self.lock:
            known = ticket in self.tickets
        if not known:
            return Response.text("invalid ticket", status=401)
        return Response(
            status=101,
            headers={
                "Upgrade": "websocket",
                "Connection": "Upgrade",
                "Sec-WebSocket-Accept": accept_key(key),
            },
            upgrade=self._serve,
        )

    def _serve(self, sock: socket.socket, rfile: Any) -> None:
        ws = WebSocket(sock, rfile)
        with self.lock:
            self.connections.append(ws)
            self.connects += 1
            count = len(self.connections)
        ws.send_json(
            {
                "type": "hello",
                "num_connections": count,
                "debug_info": {
                    "host": "applink-sandbox",
                    "build_number": 1,
                    "approximate_connection_time": 18060,
                },
                "connection_info": {"app_id": self.app_id},
            }
        )
        try:
            while True:
                opcode, data = ws.read_message()
                if opcode == OP_PING:
                    ws.send(OP_PONG, data)
                elif opcode == OP_CLOSE:
                    ws.close(struct.unpack("!H", data[:2])[0] if len(data) >= 2 else 1000)
                    break
                elif opcode == OP_TEXT:
                    self._on_text(data)
        except _Closed:
            pass
        finally:
            ws.abort()
            with self.lock:
                if ws in self.connections:
                    self.connections.remove(ws)

    # -- events and acks --------------------------------------------------------------------
    def publish(self, payload: dict[str, Any]) -> bool:
        """Send an ``events_api`` payload (an ``event_callback``); False if nobody listens."""
        with self.lock:
            if not self.connections:
                self.undelivered.append(payload)
                return False
            pending = _Pending(event_id=str(payload["event_id"]), payload=payload)
            self._pending[pending.event_id] = pending
        self._deliver(pending)
        return True

    def _deliver(self, pending: _Pending) -> None:
        envelope_id = str(uuid.uuid4())
        envelope = {
            "envelope_id": envelope_id,
            "type": "events_api",
            "accepts_response_payload": False,
            "retry_attempt": pending.attempt,
            "retry_reason": "timeout" if pending.attempt else "",
            "payload": pending.payload,
        }
        with self.lock:
            if pending.acked:
                return
            pending.envelope_ids.append(envelope_id)
            pending.sent_at[envelope_id] = time.monotonic()
            self._by_envelope[envelope_id] = pending
            open_ = [c for c in self.connections if not c.closed]
            target = open_[next(self._rr) % len(open_)] if open_ else None
            if target is not None:
                self.deliveries.append({**envelope, "socket": target.id})
            if pending.attempt < self.max_retries:
                pending.timer = threading.Timer(self.ack_timeout, self._expire, (pending,))
                pending.timer.daemon = True
                pending.timer.start()
            else:  # the last attempt: Slack gives up on this event after it
                self._pending.pop(pending.event_id, None)
        if target is not None:
            target.send_json(envelope)

    def _expire(self, pending: _Pending) -> None:
        with self.lock:
            if pending.acked:
                return
            pending.attempt += 1
        self._deliver(pending)

    def _on_text(self, data: bytes) -> None:
        try:
            msg = json.loads(data)
        except ValueError:
            return
        if not isinstance(msg, dict) or "envelope_id" not in msg:
            return
        envelope_id = str(msg["envelope_id"])
        with self.lock:
            pending = self._by_envelope.get(envelope_id)
            record = AckRecord(envelope_id, None, None, None, msg.get("payload"))
            if pending is not None:
                record.event_id = pending.event_id
                record.retry_attempt = pending.envelope_ids.index(envelope_id)
                record.latency = time.monotonic() - pending.sent_at[envelope_id]
                pending.acked = True
                if pending.timer is not None:
                    pending.timer.cancel()
                self._pending.pop(pending.event_id, None)
            self.acks.append(record)

    # -- faults and teardown ----------------------------------------------------------------
    def drop(self, *, with_disconnect: bool, reason: str = "refresh_requested") -> int:
        """Drop every connection. With ``with_disconnect`` Slack's ``disconnect`` message goes
        first and the socket closes ``disconnect_grace`` seconds later (the client is meant to
        reconnect meanwhile); without it the TCP connection just ends, with no close frame."""
        with self.lock:
            victims = list(self.connections)
        for ws in victims:
            if with_disconnect:
                notice = {
                    "type": "disconnect",
                    "reason": reason,
                    "debug_info": {"host": "applink-sandbox"},
                }
                ws.send_json(notice)
                timer = threading.Timer(self.disconnect_grace, ws.close, (1001, reason))
                timer.daemon = True
                with self.lock:
                    self._timers.append(timer)
                timer.start()
            else:
                ws.abort()
        return len(victims)

    def shutdown(self) -> None:
        with self.lock:
            victims = list(self.connections)
            timers = [p.timer for p in self._pending.values() if p.timer is not None]
            for pending in self._pending.values():
                pending.acked = True
            timers += self._timers
        for timer in timers:
            timer.cancel()
        for ws in victims:
            ws.abort()

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {
                "connections": len(self.connections),
                "connects": self.connects,
                "envelopes": len(self.deliveries),
                "acks": len(self.acks),
                "undelivered": len(self.undelivered),
            }
