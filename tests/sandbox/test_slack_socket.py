"""Socket Mode of the Slack emulator: slack_sdk's builtin SocketModeClient end to end, plus
the WebSocket protocol details checked on a raw socket."""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import pytest
from slack_sdk import WebClient
from slack_sdk.socket_mode import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from harness_cli.sandbox.slack_api import SlackEmulator
from harness_cli.sandbox.slack_socket import accept_key, encode_frame

ACK_TIMEOUT = 0.4


def wait_for(cond: Callable[[], bool], timeout: float = 8.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


@pytest.fixture
def emu() -> Iterator[SlackEmulator]:
    emulator = SlackEmulator(ack_timeout=ACK_TIMEOUT, disconnect_grace=0.5)
    emulator.start()
    yield emulator
    emulator.stop()


@dataclass
class Listener:
    """What the SDK client received; ``ack`` decides per request whether to ack it."""

    client: SocketModeClient
    requests: list[SocketModeRequest] = field(default_factory=list)
    raw: list[dict[str, Any]] = field(default_factory=list)
    ack: Callable[[SocketModeRequest], bool] = lambda req: True
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on_request(self, client: SocketModeClient, req: SocketModeRequest) -> None:
        with self.lock:
            self.requests.append(req)
        if self.ack(req):
            client.send_socket_mode_response(SocketModeResponse(envelope_id=req.envelope_id))

    def on_message(self, client: SocketModeClient, message: dict[str, Any], raw: Any) -> None:
        with self.lock:
            self.raw.append(message)

    def texts(self) -> list[str]:
        with self.lock:
            return [r.payload["event"]["text"] for r in self.requests]


@pytest.fixture
def sdk(emu: SlackEmulator) -> Iterator[Listener]:
    # ping_interval drives the SDK's health monitor; 0.3 s keeps reconnect tests short.
    client = SocketModeClient(
        app_token="xapp-1-A0HARNESS",
        web_client=WebClient(base_url=emu.url + "/api/"),
        ping_interval=0.3,
    )
    listener = Listener(client)
    client.socket_mode_request_listeners.append(listener.on_request)
    client.message_listeners.append(listener.on_message)
    client.connect()
    wait_for(lambda: any(m.get("type") == "hello" for m in listener.raw))
    yield listener
    client.auto_reconnect_enabled = client.default_auto_reconnect_enabled = False
    # Stop the server first: the SDK's close() otherwise waits out a 3 s blocking recv.
    emu.stop()
    client.close()


# -- through slack_sdk --------------------------------------------------------------------------
def test_hello_event_and_ack_without_redelivery(emu: SlackEmulator, sdk: Listener) -> None:
    hello = next(m for m in sdk.raw if m.get("type") == "hello")
    assert hello["num_connections"] == 1
    assert hello["connection_info"] == {"app_id": "A0HARNESS"}
    posted = emu.post_as("C0SUPPORT", "U0CUSTOMER", "printer on fire")
    wait_for(lambda: len(sdk.requests) == 1)
    req = sdk.requests[0]
    assert (req.type, req.retry_attempt, req.retry_reason) == ("events_api", 0, "")
    assert req.accepts_response_payload is False
    payload = req.payload
    assert payload["type"] == "event_callback" and payload["team_id"] == "T0SANDBOX"
    assert payload["api_app_id"] == "A0HARNESS" and payload["event_id"].startswith("Ev")
    assert isinstance(payload["event_time"], int)
    event = payload["event"]
    assert {k: event[k] for k in ("type", "user", "text", "ts", "channel", "channel_type")} == {
        "type": "message",
        "user": "U0CUSTOMER",
        "text": "printer on fire",
        "ts": posted["ts"],
        "channel": "C0SUPPORT",
        "channel_type": "channel",
    }
    assert event["event_ts"] == posted["ts"] and "thread_ts" not in event
    wait_for(lambda: len(emu.acks()) == 1)
    time.sleep(ACK_TIMEOUT * 2)  # a redelivery would have arrived by now
    assert len(sdk.requests) == 1
    [ack] = emu.acks()
    assert ack["envelope_id"] == req.envelope_id and ack["retry_attempt"] == 0
    assert ack["event_id"] == payload["event_id"] and 0 <= ack["latency"] < ACK_TIMEOUT


def test_unacked_envelope_is_redelivered_with_retry_fields(
    emu: SlackEmulator, sdk: Listener
) -> None:
    sdk.ack = lambda req: req.retry_attempt == 1
    emu.post_as("C0SUPPORT", "U0CUSTOMER", "hello?")
    wait_for(lambda: len(sdk.requests) == 2)
    first, retry = sdk.requests
    assert (retry.retry_attempt, retry.retry_reason) == (1, "timeout")
    assert retry.payload["event_id"] == first.payload["event_id"]
    assert retry.envelope_id != first.envelope_id
    wait_for(lambda: len(emu.acks()) == 1)
    time.sleep(ACK_TIMEOUT * 2)
    assert len(sdk.requests) == 2
    assert emu.acks()[0]["retry_attempt"] == 1


def test_redelivery_stops_after_three_retries(emu: SlackEmulator, sdk: Listener) -> None:
    sdk.ack = lambda req: False
    emu.post_as("C0SUPPORT", "U0CUSTOMER", "anyone?")
    wait_for(lambda: len(sdk.requests) == 4)
    time.sleep(ACK_TIMEOUT * 2)
    assert [r.retry_attempt for r in sdk.requests] == [0, 1, 2, 3]


def test_dm_and_thread_events(emu: SlackEmulator, sdk: Listener) -> None:
    parent = emu.post_as("D0SELF", "U0OPERATOR", "ticket")["ts"]
    emu.post_as("D0SELF", "U0REVIEWER", "detail", thread_ts=parent)
    wait_for(lambda: len(sdk.requests) == 2)
    events = sorted((r.payload["event"] for r in sdk.requests), key=lambda e: e["ts"])
    assert [e["channel_type"] for e in events] == ["im", "im"]
    assert events[1]["thread_ts"] == parent and events[1]["parent_user_id"] == "U0OPERATOR"


def test_web_api_posts_push_events_except_from_bots(emu: SlackEmulator, sdk: Listener) -> None:
    WebClient(token="xoxb-1", base_url=emu.url + "/api/").chat_postMessage(
        channel="C0SUPPORT", text="from the bot"
    )
    WebClient(token="xoxp-1", base_url=emu.url + "/api/").chat_postMessage(
        channel="C0SUPPORT", text="from a human"
    )
    wait_for(lambda: len(sdk.requests) == 1)
    time.sleep(0.2)
    assert sdk.texts() == ["from a human"]


@pytest.mark.parametrize("with_disconnect", [True, False], ids=["disconnect-msg", "tcp-drop"])
def test_client_reconnects_after_a_drop(
    emu: SlackEmulator, sdk: Listener, with_disconnect: bool
) -> None:
    assert emu.calls("apps.connections.open") == 1
    assert emu.drop_sockets(with_disconnect=with_disconnect) == 1
    wait_for(lambda: emu.calls("apps.connections.open") == 2)
    # Wait out the overlap: an event sent to the dying socket would only come by redelivery.
    wait_for(lambda: emu.socket_mode.stats()["connections"] == 1)
    emu.post_as("C0SUPPORT", "U0CUSTOMER", "after the drop")
    wait_for(lambda: sdk.texts() == ["after the drop"])


def test_events_with_no_socket_are_dropped(emu: SlackEmulator) -> None:
    emu.post_as("C0SUPPORT", "U0CUSTOMER", "nobody listening")
    stats = emu.socket_mode.stats()
    assert stats["undelivered"] == 1 and stats["envelopes"] == 0


# -- raw WebSocket protocol ---------------------------------------------------------------------
@dataclass
class Raw:
    sock: socket.socket
    rfile: BinaryIO
    status: int
    headers: dict[str, str]

    def send(self, opcode: int, payload: bytes, fin: bool = True) -> None:
        frame = bytearray(encode_frame(opcode, payload, mask=os.urandom(4)))
        if not fin:
            frame[0] &= 0x7F
        self.sock.sendall(bytes(frame))

    def recv(self) -> tuple[int, bytes]:
        b1, b2 = self.rfile.read(2)
        n = b2 & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", self.rfile.read(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", self.rfile.read(8))
        assert not b2 & 0x80, "server frames must not be masked"
        return b1 & 0x0F, self.rfile.read(n)


def raw_connect(emu: SlackEmulator, ticket: str | None = None, upgrade: bool = True) -> Raw:
    ticket = ticket if ticket is not None else emu.socket_mode.new_ticket()
    key = base64.b64encode(os.urandom(16)).decode()
    sock = socket.create_connection(("127.0.0.1", emu.port), timeout=5)
    lines = [f"GET /link/?ticket={ticket} HTTP/1.1", "Host: 127.0.0.1"]
    if upgrade:
        lines += ["Upgrade: websocket", "Connection: Upgrade"]
    lines += [f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13", "", ""]
    sock.sendall("\r\n".join(lines).encode())
    rfile = sock.makefile("rb")
    status = int(rfile.readline().split()[1])
    headers = {}
    while (line := rfile.readline().decode().strip()) != "":
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if status == 101:
        assert headers["sec-websocket-accept"] == accept_key(key)
    return Raw(sock, rfile, status, headers)


def test_raw_handshake_ping_ack_and_close(emu: SlackEmulator) -> None:
    raw = raw_connect(emu)
    try:
        assert raw.status == 101 and raw.headers["upgrade"].lower() == "websocket"
        opcode, data = raw.recv()
        assert opcode == 0x1 and json.loads(data)["type"] == "hello"
        raw.send(0x9, b"are-you-there")
        assert raw.recv() == (0xA, b"are-you-there")
        # A fragmented text message is reassembled; an unknown envelope is still recorded.
        raw.send(0x1, b'{"envelope_id": ', fin=False)
        raw.send(0x0, b'"nope"}')
        wait_for(lambda: len(emu.acks()) == 1)
        assert emu.acks()[0]["envelope_id"] == "nope" and emu.acks()[0]["event_id"] is None
        emu.post_as("C0SUPPORT", "U0CUSTOMER", "x" * 300)  # a 16-bit length frame
        opcode, data = raw.recv()
        assert json.loads(data)["payload"]["event"]["text"] == "x" * 300
        raw.send(0x8, struct.pack("!H", 1000) + b"bye")
        assert raw.recv() == (0x8, struct.pack("!H", 1000))
        assert raw.rfile.read(1) == b""
        wait_for(lambda: emu.socket_mode.stats()["connections"] == 0)
    finally:
        raw.sock.close()


def test_disconnect_message_then_close_after_grace(emu: SlackEmulator) -> None:
    raw = raw_connect(emu)
    try:
        raw.recv()  # hello
        emu.drop_sockets(with_disconnect=True, reason="link_disabled")
        _, data = raw.recv()
        assert json.loads(data)["type"] == "disconnect"
        assert json.loads(data)["reason"] == "link_disabled"
        assert raw.recv() == (0x8, struct.pack("!H", 1001) + b"link_disabled")
    finally:
        raw.sock.close()


def test_bad_handshakes_are_refused(emu: SlackEmulator) -> None:
    for raw, status in (
        (raw_connect(emu, ticket="forged"), 401),
        (raw_connect(emu, upgrade=False), 400),
    ):
        try:
            assert raw.status == status
        finally:
            raw.sock.close()
