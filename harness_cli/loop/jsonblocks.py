"""Top-level JSON objects in a model's prose (fenced ```json blocks and bare objects), in the
order they appear — for the contracts that are not the completion report (the hypothesis slate,
the reviewers' verdicts). Malformed blocks are skipped; the callers say what was missing."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[ \t]*(?:json[a-z0-9]*)?[^\n]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def json_objects(text: str) -> list[dict[str, Any]]:
    found = _objects(text, mask=True)
    # A fence inside a JSON string (``` in an MR description) cuts the fenced block short; read
    # the raw text then, so the object is still found whole.
    return found or _objects(text, mask=False)


def _objects(text: str, *, mask: bool) -> list[dict[str, Any]]:
    found: list[tuple[int, dict[str, Any]]] = []
    for match in _FENCE.finditer(text or "") if mask else ():
        try:
            data = json.loads(match.group(1).strip())
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            found.append((match.start(), data))
    masked = _FENCE.sub(lambda m: " " * (m.end() - m.start()), text or "") if mask else text
    decoder = json.JSONDecoder()
    pos = masked.find("{")
    while pos != -1:
        try:
            data, end = decoder.raw_decode(masked, pos)
        except json.JSONDecodeError:
            pos = masked.find("{", pos + 1)
            continue
        if isinstance(data, dict):
            found.append((pos, data))
        pos = masked.find("{", end)
    return [data for _, data in sorted(found, key=lambda item: item[0])]
