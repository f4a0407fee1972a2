"""The Anthropic emulator driven through the real ``anthropic`` SDK (and raw HTTP for framing)."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.httpbase import Fault

MODEL = "claude-sonnet-4-6"
ROLE = "[harness-role: sdk-smoke]"
READ_TOOL: Any = {
    "name": "Read",
    "description": "Read a file",
    "input_schema": {
        "type": "object",
        "properties": {"file_path": {"type": "string"}},
        "required": ["file_path"],
    },
}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(scope="module")
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="module")
def server(clock: FakeClock) -> Iterator[AnthropicEmulator]:
    # One server per module: stopping one costs the stdlib's 0.5 s shutdown poll.
    emulator = AnthropicEmulator("smoke", clock=clock)
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture
def emu(server: AnthropicEmulator, clock: FakeClock) -> AnthropicEmulator:
    server.reset()
    server.load_script("smoke")
    clock.now = 1000.0
    return server


@pytest.fixture
def client(emu: AnthropicEmulator) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=emu.url, api_key="sk-ant-test", max_retries=0)


def raw(
    emu: AnthropicEmulator,
    path: str,
    body: Any = None,
    method: str = "POST",
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    hdrs = {"x-api-key": "sk-ant-test", "content-type": "application/json", **(headers or {})}
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(emu.url + path, data=data, headers=hdrs, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


def sse_events(payload: bytes) -> list[tuple[str, dict[str, Any]]]:
    text = payload.decode()
    assert re.fullmatch(r"(event: [a-z_]+\ndata: [^\n]+\n\n)+", text), text[:300]
    return [
        (m.group(1), json.loads(m.group(2)))
        for m in re.finditer(r"event: ([a-z_]+)\ndata: ([^\n]+)\n\n", text)
    ]


def long_system(chars: int, ttl: str | None = None) -> list[Any]:
    control: dict[str, Any] = {"type": "ephemeral"}
    if ttl:
        control["ttl"] = ttl
    text = f"{ROLE} " + ("policy line. " * (chars // 13))
    return [{"type": "text", "text": text, "cache_control": control}]


# -- messages ------------------------------------------------------------------------------------
def test_create_non_streaming(client: anthropic.Anthropic, emu: AnthropicEmulator) -> None:
    msg = client.messages.create(
        model=MODEL, max_tokens=256, system=ROLE, messages=[{"role": "user", "content": "hi"}]
    )
    assert msg.id.startswith("msg_") and msg.type == "message" and msg.role == "assistant"
    assert msg.model == MODEL and msg.stop_reason == "end_turn" and msg.stop_sequence is None
    assert msg.content[0].type == "text" and "Hello from the scripted model" in msg.content[0].text
    assert msg.usage.input_tokens > 0 and msg.usage.output_tokens > 0
    sent = emu.recorded("/v1/messages")[-1]
    assert sent.headers.get("authorization") or sent.headers.get("x-api-key")
    assert emu.snapshot()["by_role"] == {"sdk-smoke": 1}


def test_stream_text_framing_and_sdk(client: anthropic.Anthropic, emu: AnthropicEmulator) -> None:
    with client.messages.stream(
        model=MODEL, max_tokens=256, system=ROLE, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert len(pieces) >= 2 and "".join(pieces) == final.content[0].text  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn"

    body = {"model": MODEL, "max_tokens": 64, "stream": True, "system": ROLE}
    body["messages"] = [{"role": "user", "content": "hi"}]
    status, headers, payload = raw(emu, "/v1/messages?beta=true", body)
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    names = [name for name, _ in sse_events(payload)]
    assert names[0] == "message_start" and "ping" in names[:3]
    assert names[-2:] == ["message_delta", "message_stop"]
    assert names.count("content_block_delta") >= 2
    events = dict(sse_events(payload))
    start = events["message_start"]["message"]
    assert start["content"] == [] and start["stop_reason"] is None
    assert start["usage"]["output_tokens"] == 1 and "cache_read_input_tokens" in start["usage"]
    assert events["message_delta"]["delta"]["stop_reason"] == "end_turn"
    assert events["message_delta"]["usage"]["output_tokens"] > 1


def test_stream_tool_use_parsed_from_json_deltas(
    client: anthropic.Anthropic, emu: AnthropicEmulator
) -> None:
    system = f"{ROLE}\nWorking directory: /srv/repo"
    messages: Any = [{"role": "user", "content": "please read the readme"}]
    with client.messages.stream(
        model=MODEL, max_tokens=256, system=system, tools=[READ_TOOL], messages=messages
    ) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    call = final.content[-1]
    assert call.type == "tool_use" and call.name == "Read" and call.id.startswith("toolu_")
    assert call.input == {"file_path": "/srv/repo/README.md"}

    body = {"model": MODEL, "max_tokens": 64, "stream": True, "system": system}
    body |= {"tools": [READ_TOOL], "messages": messages}
    events = sse_events(raw(emu, "/v1/messages", body)[2])
    starts = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert starts[-1]["type"] == "tool_use" and starts[-1]["input"] == {}
    partial = [
        d["delta"]["partial_json"]
        for n, d in events
        if d.get("index") == 1 and n == "content_block_delta"
    ]
    assert len(partial) >= 2 and json.loads("".join(partial)) == call.input

    follow: Any = [
        *messages,
        {"role": "assistant", "content": [b.model_dump() for b in final.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "# Repo"}],
        },
    ]
    done = client.messages.create(
        model=MODEL, max_tokens=64, system=system, tools=[READ_TOOL], messages=follow
    )
    assert done.stop_reason == "end_turn" and "nothing else to do" in done.content[0].text  # type: ignore[union-attr]
    assert [c.tool_results for c in emu.calls] == [0, 0, 1]


def test_scripted_max_tokens_stop_reason(client: anthropic.Anthropic) -> None:
    msg = client.messages.create(
        model=MODEL,
        max_tokens=16,
        system=ROLE,
        messages=[{"role": "user", "content": "write an essay"}],
    )
    assert msg.stop_reason == "max_tokens"


def test_unknown_request_fields_and_system_messages_accepted(client: anthropic.Anthropic) -> None:
    messages: Any = [
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "a mid-conversation system note"},
    ]
    msg = client.messages.create(
        model="some-future-model",
        max_tokens=64,
        system=ROLE,
        messages=messages,
        metadata={"user_id": "u1"},
        extra_body={
            "thinking": {"type": "adaptive"},
            "context_management": {"edits": []},
            "output_config": {"effort": "high"},
        },
    )
    assert msg.model == "some-future-model" and msg.stop_reason == "end_turn"


def test_unmatched_request_is_answered_and_recorded(
    client: anthropic.Anthropic, emu: AnthropicEmulator
) -> None:
    msg = client.messages.create(
        model=MODEL,
        max_tokens=64,
        tools=[READ_TOOL],
        messages=[{"role": "user", "content": "[harness-role: ghost] hello"}],
    )
    assert "no rule matched role 'ghost'" in msg.content[0].text  # type: ignore[union-attr]
    [record] = emu.unmatched()
    assert record["role"] == "ghost" and record["turn"] == 0
    assert emu.snapshot()["unmatched"] == 1


# -- other endpoints -----------------------------------------------------------------------------
def test_count_tokens_matches_usage(client: anthropic.Anthropic, emu: AnthropicEmulator) -> None:
    short = client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    text = "word " * 400
    long = client.messages.count_tokens(
        model=MODEL, system=ROLE, messages=[{"role": "user", "content": text}]
    )
    assert 0 < short.input_tokens < long.input_tokens
    msg = client.messages.create(
        model=MODEL, max_tokens=8, system=ROLE, messages=[{"role": "user", "content": text}]
    )
    assert msg.usage.input_tokens == long.input_tokens
    assert emu.usage_totals()["input_tokens"] == long.input_tokens  # count_tokens is not billed


def test_models_list_paginates_and_retrieve(client: anthropic.Anthropic) -> None:
    page = client.models.list(limit=2)
    assert len(page.data) == 2 and page.has_more is True
    assert page.first_id == page.data[0].id and page.last_id == page.data[1].id
    every = [m.id for m in client.models.list(limit=1)]
    assert len(every) == 3 and len(set(every)) == 3
    assert client.models.retrieve(every[0]).display_name
    with pytest.raises(anthropic.NotFoundError):
        client.models.retrieve("claude-nope")


def test_root_and_auth(emu: AnthropicEmulator) -> None:
    assert raw(emu, "/", method="HEAD", headers={"x-api-key": ""})[0] == 200
    assert raw(emu, "/", method="GET")[0] == 200
    status, _, payload = raw(emu, "/v1/models", method="GET", headers={"x-api-key": ""})
    assert status == 401 and json.loads(payload)["error"]["type"] == "authentication_error"
    bearer = {"x-api-key": "", "authorization": "Bearer anything"}
    assert raw(emu, "/v1/models", method="GET", headers=bearer)[0] == 200


# -- errors and faults ---------------------------------------------------------------------------
def test_missing_fields_are_400(emu: AnthropicEmulator, client: anthropic.Anthropic) -> None:
    for missing in ("model", "messages", "max_tokens"):
        full = {"model": MODEL, "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]}
        del full[missing]
        status, headers, payload = raw(emu, "/v1/messages", full)
        err = json.loads(payload)
        assert status == 400 and err["type"] == "error"
        assert (
            err["error"]["type"] == "invalid_request_error" and missing in err["error"]["message"]
        )
        assert err["request_id"] == headers["request-id"]
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(
            model=MODEL, max_tokens=0, messages=[{"role": "user", "content": "x"}]
        )
    five: Any = [
        {"type": "text", "text": f"b{i}", "cache_control": {"type": "ephemeral"}} for i in range(5)
    ]
    with pytest.raises(anthropic.BadRequestError, match="maximum of 4"):
        client.messages.create(
            model=MODEL, max_tokens=8, system=five, messages=[{"role": "user", "content": "x"}]
        )


def test_429_retry_after_is_honoured(emu: AnthropicEmulator) -> None:
    emu.add_fault(
        Fault(kind="status", status=429, match="/v1/messages", headers={"retry-after": "0.6"})
    )
    patient = anthropic.Anthropic(base_url=emu.url, api_key="sk-ant-test", max_retries=2)
    began = time.monotonic()
    msg = patient.messages.create(
        model=MODEL, max_tokens=8, system=ROLE, messages=[{"role": "user", "content": "hi"}]
    )
    assert time.monotonic() - began >= 0.6
    assert msg.stop_reason == "end_turn"
    assert [r.status for r in emu.recorded("/v1/messages")] == [429, 200]

    emu.add_fault(Fault(kind="status", status=429, match="/v1/messages"))
    status, headers, payload = raw(emu, "/v1/messages", {})
    assert status == 429 and headers["retry-after"] == "1"
    assert headers["anthropic-ratelimit-requests-remaining"] == "0"
    assert headers["anthropic-ratelimit-requests-reset"].endswith("Z")
    assert json.loads(payload)["error"]["type"] == "rate_limit_error"


def test_529_raises_overloaded_when_retries_run_out(emu: AnthropicEmulator) -> None:
    emu.add_fault(
        Fault(
            kind="status",
            status=529,
            match="/v1/messages",
            times=2,
            headers={"retry-after": "0.05"},
        )
    )
    once = anthropic.Anthropic(base_url=emu.url, api_key="sk-ant-test", max_retries=1)
    with pytest.raises(anthropic.OverloadedError) as caught:
        once.messages.create(model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "x"}])
    assert caught.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]
    assert [r.status for r in emu.recorded("/v1/messages")] == [529, 529]
    emu.add_fault(Fault(kind="status", status=500, match="/v1/messages"))
    with pytest.raises(anthropic.InternalServerError):
        anthropic.Anthropic(base_url=emu.url, api_key="k", max_retries=0).messages.create(
            model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "x"}]
        )


def test_midstream_error_makes_the_sdk_raise(
    client: anthropic.Anthropic, emu: AnthropicEmulator
) -> None:
    emu.add_fault(Fault(kind="midstream_error", match="/v1/messages"))
    request: Any = {"model": MODEL, "max_tokens": 64, "system": ROLE}
    request["messages"] = [{"role": "user", "content": "hi"}]
    with (
        pytest.raises(anthropic.APIStatusError, match="overloaded_error"),
        client.messages.stream(**request) as stream,
    ):
        for _ in stream:
            pass
    emu.add_fault(Fault(kind="midstream_error", match="/v1/messages"))
    body = {
        "model": MODEL,
        "max_tokens": 8,
        "stream": True,
        "system": ROLE,
        "messages": [{"role": "user", "content": "hi"}],
    }
    names = [name for name, _ in sse_events(raw(emu, "/v1/messages", body)[2])]
    assert names == ["message_start", "ping", "content_block_start", "content_block_delta", "error"]


# -- prompt caching ------------------------------------------------------------------------------
def cached_call(
    client: anthropic.Anthropic, system: Any, text: str = "hi"
) -> anthropic.types.Usage:
    msg = client.messages.create(
        model=MODEL, max_tokens=8, system=system, messages=[{"role": "user", "content": text}]
    )
    return msg.usage


def test_cache_write_then_read_then_expire(
    client: anthropic.Anthropic, emu: AnthropicEmulator, clock: FakeClock
) -> None:
    system = long_system(8000)
    first = cached_call(client, system)
    assert first.cache_creation_input_tokens and first.cache_creation_input_tokens >= 1024
    assert first.cache_read_input_tokens == 0
    assert first.cache_creation is not None
    assert first.cache_creation.ephemeral_5m_input_tokens == first.cache_creation_input_tokens
    second = cached_call(client, system)
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == 0 and second.input_tokens == first.input_tokens

    clock.advance(250)
    assert cached_call(client, system).cache_read_input_tokens  # a hit refreshes the 5 minutes
    clock.advance(250)
    assert cached_call(client, system).cache_read_input_tokens
    clock.advance(301)
    expired = cached_call(client, system)
    assert expired.cache_read_input_tokens == 0
    assert expired.cache_creation_input_tokens == first.cache_creation_input_tokens

    totals = emu.usage_totals()
    assert totals["cache_creation_input_tokens"] == 2 * first.cache_creation_input_tokens
    assert totals["cache_read_input_tokens"] == 3 * first.cache_creation_input_tokens
    assert emu.snapshot()["usage"] == totals


def test_one_hour_ttl(client: anthropic.Anthropic, clock: FakeClock) -> None:
    system = long_system(8000, ttl="1h")
    first = cached_call(client, system)
    assert (
        first.cache_creation
        and first.cache_creation.ephemeral_1h_input_tokens == first.cache_creation_input_tokens
    )
    clock.advance(1800)
    assert cached_call(client, system).cache_read_input_tokens == first.cache_creation_input_tokens
    clock.advance(3601)
    assert cached_call(client, system).cache_read_input_tokens == 0


def test_below_minimum_caches_nothing(client: anthropic.Anthropic) -> None:
    system = long_system(2000)  # ~500 tokens, under the 1024 minimum
    for _ in range(2):
        usage = cached_call(client, system)
        assert usage.cache_creation_input_tokens == 0 and usage.cache_read_input_tokens == 0


def test_growing_conversation_reads_the_earlier_prefix(client: anthropic.Anthropic) -> None:
    """Like the claude CLI: the breakpoint moves to the newest message each turn."""
    system = [{"type": "text", "text": f"{ROLE} " + "rules. " * 800}]

    def turn(messages: list[Any]) -> anthropic.types.Usage:
        marked = [dict(m) for m in messages]
        marked[-1]["content"] = [
            {"type": "text", "text": marked[-1]["content"], "cache_control": {"type": "ephemeral"}}
        ]
        return client.messages.create(
            model=MODEL, max_tokens=8, system=system, messages=marked
        ).usage  # type: ignore[arg-type]

    convo: list[Any] = [{"role": "user", "content": "first question " * 10}]
    one = turn(convo)
    convo += [
        {"role": "assistant", "content": "answer"},
        {"role": "user", "content": "second question"},
    ]
    two = turn(convo)
    assert one.cache_read_input_tokens == 0 and one.cache_creation_input_tokens
    assert two.cache_read_input_tokens == one.cache_creation_input_tokens
    assert 0 < (two.cache_creation_input_tokens or 0) < (one.cache_creation_input_tokens or 0)


# -- control API ---------------------------------------------------------------------------------
def test_control_over_http(emu: AnthropicEmulator, client: anthropic.Anthropic) -> None:
    script = {"roles": {"default": [{"reply": {"text": "inline answer"}}]}}
    status, _, payload = raw(emu, "/_control/load_script", {"script": script})
    assert status == 200 and json.loads(payload)["roles"] == ["default"]
    msg = client.messages.create(
        model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "x"}]
    )
    assert msg.content[0].text == "inline answer"  # type: ignore[union-attr]
    raw(emu, "/_control/set_script", {"name": "smoke"})
    state = json.loads(raw(emu, "/_control/state", {})[2])
    assert set(state) >= {"requests", "usage", "by_role", "unmatched"}
    assert state["by_role"] == {"default": 1} and state["unmatched"] == 0
    assert set(state["usage"]) == {
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    }
    assert json.loads(raw(emu, "/_control/usage", {})[2]) == state["usage"]
    assert json.loads(raw(emu, "/_control/unmatched", {})[2]) == {"unmatched": []}
