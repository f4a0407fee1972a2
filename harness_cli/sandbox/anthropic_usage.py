"""Token estimates and prompt-cache accounting for the Anthropic emulator.

Honest rather than exact: tokens are estimated as ~4 characters each, deterministically, and
the prompt cache follows the documented rules (platform.claude.com … prompt-caching):

- The prompt is read in cache order — tools, then system, then messages — as a list of
  blocks; a block carrying ``cache_control`` is a breakpoint (at most 4, else 400).
- The prefix up to each breakpoint is hashed (with the model: caches are per model). A hit is
  an unexpired entry for the prefix at a breakpoint or at one of the 20 blocks before it (the
  API's look-back), and counts as ``cache_read_input_tokens``; the hit refreshes its TTL.
- Breakpoints past the hit are written: their new tokens are ``cache_creation_input_tokens``,
  split by TTL (``5m`` default, ``1h``). A prefix shorter than the model's minimum is never
  written and gives no error. What follows the last breakpoint is plain ``input_tokens``.
- Time comes from an injected clock, so tests move past a TTL without sleeping.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CacheControlError",
    "PromptBlock",
    "PromptCache",
    "count_input_tokens",
    "estimate_tokens",
    "min_cacheable_tokens",
    "output_tokens",
    "prompt_blocks",
]

CHARS_PER_TOKEN = 4
MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
# Minimum cacheable prefix per model family (prompt-caching docs); others get 1024.
MIN_CACHEABLE = (
    ("claude-opus-4-5", 4096),
    ("claude-opus-4-6", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
)
DEFAULT_MIN_CACHEABLE = 1024


class CacheControlError(ValueError):
    """The request's ``cache_control`` use is invalid (the API answers 400)."""


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def min_cacheable_tokens(model: str) -> int:
    for prefix, minimum in MIN_CACHEABLE:
        if model.startswith(prefix):
            return minimum
    return DEFAULT_MIN_CACHEABLE


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class PromptBlock:
    """One block of a prompt in cache order, as the cache sees it: two blocks are the same
    exactly when their ``key`` is (``cache_control`` aside)."""

    tokens: int
    key: str
    ttl: str | None
    """The breakpoint's TTL, or None: no ``cache_control`` on this block."""
    label: str = ""
    """Where it sits: ``tool:Read``, ``system[1]``, ``msg0.user[2]``…"""

    @property
    def breakpoint(self) -> bool:
        return self.ttl is not None


_Block = PromptBlock


def _block(kind: str, item: Any, label: str = "") -> _Block:
    """One prompt block; ``cache_control`` marks a breakpoint and is not part of the content."""
    ttl = None
    if isinstance(item, str):  # the API reads string content as one text block
        item = {"type": "text", "text": item}
    if isinstance(item, dict):
        control = item.get("cache_control")
        if isinstance(control, dict):
            ttl = str(control.get("ttl") or "5m")
            if ttl not in TTL_SECONDS:
                raise CacheControlError(
                    f"cache_control.ttl: Input should be '5m' or '1h', not {ttl!r}"
                )
        item = {k: v for k, v in item.items() if k != "cache_control"}
        text = item.get("text") if item.get("type") == "text" else None
        tokens = estimate_tokens(text if isinstance(text, str) else _canonical(item))
    else:
        tokens = estimate_tokens(item if isinstance(item, str) else _canonical(item))
    return _Block(tokens=tokens, key=f"{kind}:{_canonical(item)}", ttl=ttl, label=label)


def _tool_label(tool: Any) -> str:
    return f"tool:{tool.get('name')}" if isinstance(tool, dict) else "tool"


def _blocks(body: Mapping[str, Any]) -> list[_Block]:
    blocks = [_block("tool", t, _tool_label(t)) for t in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, list):
        blocks += [_block("system", b, f"system[{i}]") for i, b in enumerate(system)]
    elif system:
        blocks.append(_block("system", system, "system[0]"))
    for n, message in enumerate(body.get("messages") or []):
        if not isinstance(message, dict):
            continue
        kind = f"message:{message.get('role')}"
        content = message.get("content")
        items = content if isinstance(content, list) else [content]
        blocks += [
            _block(kind, item, f"msg{n}.{message.get('role')}[{i}]")
            for i, item in enumerate(items)
            if item is not None
        ]
    return blocks


def prompt_blocks(body: Mapping[str, Any]) -> list[PromptBlock]:
    """A Messages request as the prompt cache reads it: tools, system, messages, in order
    (the prefix report and the cache share this one view)."""
    return _blocks(body)


def count_input_tokens(body: Mapping[str, Any]) -> int:
    """All input tokens of a request, cached or not (what ``count_tokens`` answers)."""
    return max(1, sum(b.tokens for b in _blocks(body)))


def output_tokens(text: str | None, tool_calls: list[tuple[str, dict[str, Any]]]) -> int:
    total = estimate_tokens(text or "")
    total += sum(estimate_tokens(name + _canonical(args)) for name, args in tool_calls)
    return max(1, total)


@dataclass
class _Entry:
    ttl: float
    expires: float


class PromptCache:
    """The emulated prompt cache and the running usage totals; thread-safe."""

    def __init__(self, clock: Callable[[], float], min_tokens: int | None = None) -> None:
        self._clock = clock
        self._min_tokens = min_tokens
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self._totals = dict.fromkeys(
            (
                "input_tokens",
                "output_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
            ),
            0,
        )

    def account(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The ``usage`` of one Messages request (output tokens 0 until ``add_output``)."""
        blocks = _blocks(body)
        breakpoints = [i for i, b in enumerate(blocks) if b.ttl is not None]
        if len(breakpoints) > MAX_BREAKPOINTS:
            raise CacheControlError(
                f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                f"Found {len(breakpoints)}."
            )
        model = str(body.get("model", ""))
        minimum = self._min_tokens if self._min_tokens is not None else min_cacheable_tokens(model)
        digests, cumulative = [], []
        hasher = hashlib.sha256(model.encode())
        running = 0
        for block in blocks:
            hasher.update(hashlib.sha256(block.key.encode()).digest())
            digests.append(hasher.hexdigest())
            running += block.tokens
            cumulative.append(running)
        total = max(1, running)
        with self._lock:
            now = self._clock()
            self._entries = {k: e for k, e in self._entries.items() if e.expires > now}
            hit = -1
            for bp in breakpoints:
                for pos in range(bp, max(-1, bp - LOOKBACK_BLOCKS - 1), -1):
                    if digests[pos] in self._entries:
                        hit = max(hit, pos)
                        break
            if hit >= 0:
                entry = self._entries[digests[hit]]
                entry.expires = now + entry.ttl
            read = cumulative[hit] if hit >= 0 else 0
            written = {"5m": 0, "1h": 0}
            cut = read
            for bp in breakpoints:
                if bp <= hit or cumulative[bp] < minimum:
                    continue
                ttl = blocks[bp].ttl or "5m"
                written[ttl] += cumulative[bp] - cut
                cut = cumulative[bp]
                seconds = TTL_SECONDS[ttl]
                old = self._entries.get(digests[bp])
                keep = max(seconds, old.ttl) if old else seconds
                self._entries[digests[bp]] = _Entry(ttl=keep, expires=now + keep)
            creation = written["5m"] + written["1h"]
            self._totals["input_tokens"] += total - read - creation
            self._totals["cache_creation_input_tokens"] += creation
            self._totals["cache_read_input_tokens"] += read
            usage: dict[str, Any] = {
                "input_tokens": total - read - creation,
                "cache_creation_input_tokens": creation,
                "cache_read_input_tokens": read,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": written["5m"],
                    "ephemeral_1h_input_tokens": written["1h"],
                },
                "output_tokens": 0,
                "service_tier": "standard",
            }
        return usage

    def add_output(self, tokens: int) -> None:
        with self._lock:
            self._totals["output_tokens"] += tokens

    def totals(self) -> dict[str, int]:
        with self._lock:
            return dict(self._totals)

    def clear(self) -> None:
        """Forget every cached prefix (totals are kept)."""
        with self._lock:
            self._entries.clear()

    def reset(self) -> None:
        """Forget every cached prefix and zero the totals."""
        with self._lock:
            self._entries.clear()
            self._totals = dict.fromkeys(self._totals, 0)
