"""A local Anthropic Messages API: the real ``anthropic`` SDK and the real claude CLI talk to it
unchanged (``base_url`` / ``ANTHROPIC_BASE_URL``), and a script plays the model.

Endpoints: ``POST /v1/messages`` (JSON or SSE, ``?beta=true`` too), ``POST
/v1/messages/count_tokens``, ``GET /v1/models[/{id}]``, ``HEAD``/``GET /``. Any API key and any
``anthropic-version`` are accepted, and so are request fields the emulator does not know
(the CLI sends ``thinking``, ``context_management``, ``output_config``, system messages…).

Faults come from the base queue; ``status`` faults answer in the API's error shape, and a
``midstream_error`` fault starts a 200 stream, breaks off inside the first block and sends an
``event: error`` (``overloaded_error`` unless ``body`` names another type); a non-streaming
request hit by it gets a plain 529. Its prompt still counts in the usage, as a processed one.
A ``midstream_stall`` fault starts the stream the same way, then sends nothing more for
``seconds`` and closes it unfinished (a non-streaming request waits as long, then gets a 529):
a broken stream that neither errors nor ends, as a wedged proxy or an overloaded API gives.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harness_cli.sandbox.anthropic_forward import Upstream, forward
from harness_cli.sandbox.anthropic_usage import (
    CacheControlError,
    PromptCache,
    count_input_tokens,
    output_tokens,
)
from harness_cli.sandbox.httpbase import Emulator, Fault, Request, Response
from harness_cli.sandbox.model_script import Match, RequestView, Script, load_script, match_request

__all__ = ["DEFAULT_MODELS", "AnthropicEmulator", "ServedCall"]

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
DEFAULT_MODELS = (
    ("claude-sonnet-4-6", "Claude Sonnet 4.6", "2026-02-17T00:00:00Z"),
    ("claude-opus-4-6", "Claude Opus 4.6", "2026-02-05T00:00:00Z"),
    ("claude-haiku-4-5-20251001", "Claude Haiku 4.5", "2025-10-01T00:00:00Z"),
)
MODEL_PATH = re.compile(r"^/v1/models/([^/]+)$")
CHUNK_CHARS = 48
BODY_LOG_BYTES = 32 * 1024 * 1024
"""The request-body log stops here (one claude CLI request is ~100 KB): a sandbox left running
for days must not fill the disk. Its last line then says it was cut."""


@dataclass
class ServedCall:
    """One ``/v1/messages`` call as the emulator answered it."""

    role: str
    rule: str | None
    turn: int
    tools_present: bool
    tool_results: int
    stream: bool
    stop_reason: str
    usage: dict[str, Any]
    unmatched: str | None = None
    interrupted: bool = False


def _error_body(kind: str, message: str, request_id: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}


def _chunks(text: str) -> list[str]:
    """At least two pieces for anything longer than one character, like the real stream."""
    if len(text) < 2:
        return [text]
    count = max(2, -(-len(text) // CHUNK_CHARS))
    size = -(-len(text) // count)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class AnthropicEmulator(Emulator):
    """The Messages API with a scripted model, honest usage and prompt-cache accounting."""

    name = "anthropic"

    def __init__(
        self,
        script: Script | Mapping[str, Any] | Path | str | None = None,
        *,
        variables: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        cache_min_tokens: int | None = None,
        models: tuple[tuple[str, str, str], ...] = DEFAULT_MODELS,
        body_log: Path | None = None,
        body_log_bytes: int = BODY_LOG_BYTES,
    ) -> None:
        """``script``: a ``Script``, inline dict, YAML path or shipped name (``smoke``);
        ``clock``: seconds, for cache TTLs; ``cache_min_tokens`` overrides the per-model
        minimum cacheable prefix; ``models``: (id, display name, created) for ``/v1/models``;
        ``body_log``: a JSON-lines file receiving every ``/v1/messages`` body with its role,
        turn and usage (what the model was shown: ``bench/report_prefix.py`` reads it), up to
        ``body_log_bytes``."""
        super().__init__()
        self.body_log = body_log
        self.body_log_bytes = body_log_bytes
        self._logged = 0
        self.script: Script | None = load_script(script, variables) if script is not None else None
        self.clock = clock
        self.cache = PromptCache(clock, cache_min_tokens)
        self.models = models
        self.calls: list[ServedCall] = []
        self.upstream: Upstream | None = None
        """Roles played live: their requests go on to the real API (``anthropic_forward``)."""

    # -- Python API ------------------------------------------------------------------------
    def load_script(
        self,
        source: Script | Mapping[str, Any] | Path | str,
        variables: Mapping[str, str] | None = None,
        seed: int | None = None,
    ) -> Script:
        script = load_script(source, variables, seed)
        with self.lock:
            self.script = script
        return script

    def play_live(self, upstream: Upstream | None) -> None:
        """Hand ``upstream.roles``' requests to the real API (None: script every role again)."""
        with self.lock:
            self.upstream = upstream

    def usage_totals(self) -> dict[str, int]:
        return self.cache.totals()

    def reset(self) -> None:
        """Forget requests, served calls, faults, cached prefixes and totals; keep the script."""
        with self.lock:
            self.requests.clear()
            self.calls.clear()
            self.faults.clear()
            self.cache.reset()
            self.upstream = None
            if self.body_log is not None and self._logged >= 0 and self.body_log.exists():
                with self.body_log.open("a", encoding="utf-8") as out:
                    out.write('{"reset": true}\n')  # what follows is another run

    def unmatched(self) -> list[dict[str, Any]]:
        """Requests no rule answered, each with its role, turn and the reason."""
        with self.lock:
            return [asdict(c) for c in self.calls if c.unmatched]

    # -- control and state -----------------------------------------------------------------
    def control(self, action: str, body: dict[str, Any]) -> Any:
        if action in ("load_script", "set_script"):
            source = body.get("script") or body.get("path") or body.get("name")
            if source is None:
                raise KeyError(action)
            script = self.load_script(source, body.get("variables"), body.get("seed"))
            return {"ok": True, "roles": sorted(script.roles)}
        if action == "usage":
            return self.usage_totals()
        if action == "unmatched":
            return {"unmatched": self.unmatched()}
        if action == "calls":
            with self.lock:
                return {"calls": [asdict(c) for c in self.calls]}
        if action == "reset":
            self.reset()
            return {"ok": True}
        if action == "clear_cache":
            self.cache.clear()
            return {"ok": True}
        return super().control(action, body)

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            by_role: dict[str, int] = {}
            for call in self.calls:
                by_role[call.role] = by_role.get(call.role, 0) + 1
            totals = self.cache.totals()
            return {
                "requests": len(self.requests),
                "messages": len(self.calls),
                "usage": totals,
                "by_role": by_role,
                "unmatched": sum(1 for c in self.calls if c.unmatched),
            }

    # -- HTTP ------------------------------------------------------------------------------
    def route(self, req: Request) -> Response:
        if req.path == "/" and req.method in ("GET", "HEAD"):
            return Response.text("ok")
        if req.path.startswith("/v1/") and not (
            req.headers.get("x-api-key") or req.headers.get("authorization")
        ):
            return self.error(401, "x-api-key header is required")
        if req.method == "POST" and req.path == "/v1/messages":
            return self._messages(req, None)
        if req.method == "POST" and req.path == "/v1/messages/count_tokens":
            body = self._body(req)
            if isinstance(body, Response):
                return body
            if "model" not in body or not isinstance(body.get("messages"), list):
                return self.error(400, "model and messages: Field required")
            return Response.json({"input_tokens": count_input_tokens(body)}, headers=self._ids())
        if req.method == "GET" and req.path == "/v1/models":
            return self._list_models(req)
        found = MODEL_PATH.match(req.path)
        if req.method == "GET" and found:
            for model in self._model_infos():
                if model["id"] == found.group(1):
                    return Response.json(model, headers=self._ids())
            return self.error(404, f"model: {found.group(1)}")
        return self.error(404, f"Not found: {req.method} {req.path}")

    def fault_response(self, fault: Fault, req: Request) -> Response:
        if fault.kind in ("midstream_error", "midstream_stall"):
            return self._messages(req, fault)
        status = fault.status
        body = fault.body
        request_id = f"req_{uuid.uuid4().hex[:24]}"
        if isinstance(body, dict) and body.get("type") == "error":
            payload = {**body, "request_id": request_id}
        else:
            message = body if isinstance(body, str) else f"Injected fault ({status})"
            payload = _error_body(ERROR_TYPES.get(status, "api_error"), message, request_id)
        headers = {"request-id": request_id, **fault.headers}
        if status == 429:
            wait = float(headers.setdefault("retry-after", "1"))
            reset = datetime.now(UTC) + timedelta(seconds=wait)
            headers.setdefault("anthropic-ratelimit-requests-limit", "50")
            headers.setdefault("anthropic-ratelimit-requests-remaining", "0")
            headers.setdefault(
                "anthropic-ratelimit-requests-reset", reset.isoformat().replace("+00:00", "Z")
            )
        return Response.json(payload, status=status, headers=headers)

    def error(self, status: int, message: str) -> Response:
        headers = self._ids()
        kind = ERROR_TYPES.get(status, "api_error")
        return Response.json(_error_body(kind, message, headers["request-id"]), status, headers)

    # -- internals -------------------------------------------------------------------------
    @staticmethod
    def _ids() -> dict[str, str]:
        return {"request-id": f"req_{uuid.uuid4().hex[:24]}"}

    def _body(self, req: Request) -> dict[str, Any] | Response:
        try:
            body = json.loads(req.body) if req.body else None
        except ValueError:
            return self.error(400, "The request body is not valid JSON.")
        if not isinstance(body, dict):
            return self.error(400, "The request body must be a JSON object.")
        return body

    def _messages(self, req: Request, fault: Fault | None) -> Response:
        body = self._body(req)
        if isinstance(body, Response):
            return body
        for name in ("model", "messages", "max_tokens"):
            if name not in body:
                return self.error(400, f"{name}: Field required")
        if not isinstance(body["messages"], list) or not body["messages"]:
            return self.error(400, "messages: at least one message is required")
        max_tokens = body["max_tokens"]
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            return self.error(400, "max_tokens: Input should be a positive integer")
        stream = bool(body.get("stream"))
        if fault is not None and not stream:
            if fault.kind == "midstream_stall":
                self.halted.wait(fault.seconds)
            return self.error(529, "Overloaded")
        view = RequestView.from_body(body)
        upstream = self.upstream
        if upstream is not None and view.role in upstream.roles and fault is None:
            answer = forward(upstream, req)
            with self.lock:
                self.calls.append(ServedCall(role=view.role, rule="live", turn=view.turn,
                    tools_present=bool(view.tools), tool_results=len(view.tool_results),
                    stream=stream, stop_reason=f"live:{answer.status}", usage={},
                    unmatched=None, interrupted=False))  # fmt: skip
            return answer
        try:
            usage = self.cache.account(body)
        except CacheControlError as exc:
            return self.error(400, str(exc))
        with self.lock:
            outcome = match_request(self.script, view)
        message = self._message(body, outcome, usage)
        self.cache.add_output(usage["output_tokens"])
        call = ServedCall(
            role=view.role,
            rule=outcome.rule,
            turn=view.turn,
            tools_present=bool(view.tools),
            tool_results=len(view.tool_results),
            stream=stream,
            stop_reason=message["stop_reason"],
            usage=usage,
            unmatched=outcome.unmatched,
            interrupted=fault is not None,
        )
        with self.lock:
            self.calls.append(call)
            self._log_body(body, call)
        headers = self._ids()
        if not stream:
            return Response.json(message, headers=headers)
        headers.update(
            {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
        )
        return Response(headers=headers, stream=self._events(message, fault))

    def _message(
        self, body: Mapping[str, Any], outcome: Match, usage: dict[str, Any]
    ) -> dict[str, Any]:
        text = outcome.text
        if outcome.unmatched:
            text = f"[sandbox model] {outcome.unmatched}. Add a rule for this state to the script."
        content: list[dict[str, Any]] = []
        if text is not None:
            content.append({"type": "text", "text": text})
        for name, args in outcome.tool_calls:
            block = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": name}
            content.append({**block, "input": args})
        usage["output_tokens"] = output_tokens(text, outcome.tool_calls)
        stop = outcome.stop_reason or ("tool_use" if outcome.tool_calls else "end_turn")
        return {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "content": content,
            "model": str(body["model"]),
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }

    def _events(self, message: dict[str, Any], fault: Fault | None) -> Iterator[bytes]:
        usage = message["usage"]
        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {**usage, "output_tokens": 1},
        }
        yield _sse("message_start", {"type": "message_start", "message": start})
        yield _sse("ping", {"type": "ping"})
        for index, block in enumerate(message["content"]):
            if block["type"] == "text":
                opening: dict[str, Any] = {"type": "text", "text": ""}
                pieces = [{"type": "text_delta", "text": c} for c in _chunks(block["text"])]
            else:
                opening = {**block, "input": {}}
                raw = json.dumps(block["input"])
                pieces = [{"type": "input_json_delta", "partial_json": c} for c in _chunks(raw)]
            yield _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
            for piece in pieces:
                delta = {"type": "content_block_delta", "index": index, "delta": piece}
                yield _sse("content_block_delta", delta)
                if fault is not None and fault.kind == "midstream_stall":
                    self.halted.wait(fault.seconds)
                    return  # closed without an end: no content_block_stop, no message_stop
                if fault is not None:
                    yield self._midstream(fault)
                    return
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})
        final = {k: usage[k] for k in usage if k.endswith("tokens")}
        delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
        yield _sse("message_delta", {"type": "message_delta", "delta": delta, "usage": final})
        yield _sse("message_stop", {"type": "message_stop"})

    def _log_body(self, body: Mapping[str, Any], call: ServedCall) -> None:
        """One line per request while under the bound; then one line saying it was cut."""
        if self.body_log is None or self._logged < 0:
            return
        record = {"call": len(self.calls) - 1, "role": call.role, "turn": call.turn,
                  "usage": call.usage, "body": body}  # fmt: skip
        line = json.dumps(record, ensure_ascii=False) + "\n"
        size = len(line.encode())
        if self._logged + size > self.body_log_bytes:
            line, self._logged = json.dumps({"truncated": True, "at_call": record["call"]}), -1
            line += "\n"
        else:
            self._logged += size
        self.body_log.parent.mkdir(parents=True, exist_ok=True)
        with self.body_log.open("a", encoding="utf-8") as out:
            out.write(line)

    @staticmethod
    def _midstream(fault: Fault) -> bytes:
        body = fault.body if isinstance(fault.body, dict) else {}
        kind = str(body.get("type") or "overloaded_error")
        message = str(body.get("message") or "Overloaded")
        return _sse("error", {"type": "error", "error": {"type": kind, "message": message}})

    def _model_infos(self) -> list[dict[str, Any]]:
        return [
            {
                "type": "model",
                "id": mid,
                "display_name": name,
                "created_at": created,
                "lifecycle": "active",
            }
            for mid, name, created in self.models
        ]

    def _list_models(self, req: Request) -> Response:
        models = self._model_infos()
        ids = [m["id"] for m in models]
        after, before = req.arg("after_id"), req.arg("before_id")
        limit = max(1, int(req.arg("limit") or 20))
        if before in ids:
            window = models[: ids.index(before)]
            page = window[-limit:]
        else:
            window = models[ids.index(after) + 1 :] if after in ids else models
            page = window[:limit]
        return Response.json(
            {
                "data": page,
                "has_more": len(window) > len(page),
                "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None,
            },
            headers=self._ids(),
        )
