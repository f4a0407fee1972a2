"""The LLM judge of live mode: does an answer name the expected root cause? A grader's rubric
decides what it can from the text; where the wording of a real model's answer leaves it open,
a live eval asks the runtime's own model (the configured runtime, metered like every call).

Live mode only: a scripted eval grades on its rubric alone (a script's "judge" would only
repeat what the case's author wrote), so without ANTHROPIC_API_KEY the judge refuses in one
line instead of answering. A grader calls it for a live case (``case.needs_api_key``: a
``harness eval --live`` trial, or a case with ``models:``/``script: live``) after the trial,
in the worker's own environment — the key and endpoint ``harness eval`` runs with — passing
the trial's runtime; it adds ``Judgement.usd`` to the trial's cost. The judge's call is a
reviewer's: a fresh empty folder, no shell, no file writes, no MCP server, one answer.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_cli.eval.live import require_key

if TYPE_CHECKING:
    from harness_cli.config import Config

ROLE = "judge"
PROMPT = """[harness-role: judge]
You grade an incident investigation. Decide whether the ANSWER states the same root cause as
the EXPECTED root cause: the same mechanism at the same place. A symptom, a neighbouring
cause, a list of candidates or a vaguer statement is not a match; other words for the same
cause are.

EXPECTED root cause:
{expected}

ANSWER:
{answer}

Reply with one JSON object and nothing else:
{{"match": true or false, "reason": "one sentence"}}"""
_OBJECT = re.compile(r"\{[^{}]*\"match\"[^{}]*\}", re.DOTALL)


@dataclass
class Judgement:
    match: bool | None
    """None: the judge gave no verdict that parses (a grader counts it as grader_error)."""
    reason: str
    usd: float
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"match": self.match, "reason": self.reason, "usd": round(self.usd, 6),
                "seconds": round(self.seconds, 3)}  # fmt: skip


def judge(
    expected: str, answer: str, *, cfg: Config | None = None, runtime: str | None = None
) -> Judgement:
    """The model's verdict on ``answer`` against ``expected``. ``cfg``: the agent-config whose
    model, prices and budgets apply (default: HARNESS_CONFIG's, else the packaged example);
    ``runtime``: anthropic or claude-code (default: HARNESS_RUNTIME, else the config's)."""
    require_key("the LLM judge (live mode)")
    from harness_cli.agents.factory import build_runtime, configured_runtime
    from harness_cli.agents.metered import MeteredRuntime
    from harness_cli.loop.runs import reviewer_disallowed
    from harness_cli.services.runtime import RunRequest

    cfg = cfg or _config()
    model = (
        configured_runtime(cfg)
        if runtime is None
        else MeteredRuntime(build_runtime(runtime, model=cfg.harness.model,
                                          sandbox=cfg.harness.sandbox, inputs=cfg.harness.inputs),
                            cfg.harness.cost, cfg.harness.model)
    )  # fmt: skip
    workdir = Path(tempfile.mkdtemp(prefix="harness-judge-"))
    began = time.monotonic()
    try:
        result = model.run(
            RunRequest(
                role=ROLE,
                prompt=PROMPT.format(expected=expected.strip(), answer=answer.strip()),
                workdir=workdir,
                allowed_root=workdir,
                disallowed_tools=reviewer_disallowed(cfg),
                max_turns=2,
                timeout_s=300.0,
            )
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    took = time.monotonic() - began
    if not result.ok:
        why = result.error or result.stop
        return Judgement(None, f"the judge's call failed: {why}", result.cost_usd, took)
    return _verdict(result.text, result.cost_usd, took)


def _config() -> Config:
    """HARNESS_CONFIG's agent-config, or the packaged example's where there is none (a grader
    in an eval worker runs outside any install)."""
    from harness_cli import resources
    from harness_cli.config import load_config
    from harness_cli.errors import ConfigError

    try:
        return load_config()
    except ConfigError:
        return load_config(resources.example_config())


def _verdict(text: str, usd: float, seconds: float) -> Judgement:
    for found in reversed(_OBJECT.findall(text)):
        try:
            data = json.loads(found)
        except ValueError:
            continue
        if isinstance(data.get("match"), bool):
            return Judgement(data["match"], str(data.get("reason", ""))[:500], usd, seconds)
    return Judgement(None, f"the judge's answer holds no verdict: {text[:200]!r}", usd, seconds)
