"""Run a case of the misbehaving-model library (``eval/cases.py``) for real:
`harness init`, `case new`, `harness investigate` and `harness review` in-process, on either
runtime, against the Anthropic emulator playing the case's script and the Slack emulator
receiving the operator's DM, in a temporary home, workspace and config of its own.

What is observed comes from the wire (the prompts the model received, the posts Slack
received) and the disk (iterations/, ANALYSIS.md, TASK.md, case.json), never from the
harness's own return values alone. A delivery case goes to ``delivery_driver``. Used by the tests
and ``bench/bench_investigation.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness_cli.cli import run
from harness_cli.eval.cases import LibraryCase, Observed
from harness_cli.eval.delivery_driver import run_delivery_case
from harness_cli.eval.suites import live_model_env, live_upstream
from harness_cli.eval.trial_home import copy_config, mark_trial, spent
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.httpbase import Fault
from harness_cli.sandbox.model_script import RequestView
from harness_cli.sandbox.runner import SANDBOX_TOKENS
from harness_cli.sandbox.slack_api import SlackEmulator

REPO = Path(__file__).resolve().parents[2]
CASE_ID = "LIB-1"
TICKET = (
    "Bulk discount is not applied to orders of exactly 10 units. The README says 10 % off from "
    "10 units on, and an order of 10 × 5.00 is charged 50.00 instead of 45.00."
)
_NOTE_CODE = re.compile(r"^\d+\. \[([A-Z0-9_]+)", re.MULTILINE)
GUARD_HEADING = "## SYSTEM QUALITY GUARD NOTES"


def run_case(
    case: LibraryCase,
    runtime: str,
    *,
    anthropic: AnthropicEmulator | None = None,
    keep: Path | None = None,
    seed: int | None = None,
    ablate: frozenset[str] = frozenset(),
    config_root: Path | None = None,
) -> Observed:
    """One run of ``case`` on ``runtime``. ``anthropic``: a started emulator to reuse (reset
    here); ``keep``: leave the run's files there instead of deleting them; ``seed``: the
    stochastic script's draws (an eval trial's); ``ablate``: components this trial turns off
    (``harness_cli.components``); ``config_root``: a folder with ``agent-config/`` and
    ``sops/`` to use instead of the packaged example (an eval's before/after)."""
    if case.kind == "delivery":
        return run_delivery_case(case, runtime, anthropic=anthropic, keep=keep, seed=seed,
                                 ablate=ablate, config_root=config_root)  # fmt: skip
    root = Path(tempfile.mkdtemp(prefix=f"harness-lib-{case.id}-", dir=keep))
    own = anthropic is None
    emu = anthropic or AnthropicEmulator()
    if own:
        emu.start()
    slack = SlackEmulator()
    slack.start()
    try:
        emu.reset()
        if not case.live:
            emu.load_script(case.model_source(), case.variables or None, seed)

            emu.play_live(live_upstream(case))  # models: {ROLE: live}
        for fault in case.setup.faults:
            emu.add_fault(Fault(**fault))
        env = _prepare(root, case, runtime, emu.url, slack.url, config_root)
        if case.live:  # the real API plays every role; the emulator sees nothing
            env.update(live_model_env(case))
        mark_trial(Path(str(env["HARNESS_HOME"])), ablate, seed)
        with _environment(env):
            seen = _run(case, runtime, root, emu, slack)
        seen.usd, seen.tokens = spent(Path(str(env["HARNESS_HOME"])))
        return seen
    finally:
        slack.stop()
        if own:
            emu.stop()
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)


def _prepare(
    root: Path,
    case: LibraryCase,
    runtime: str,
    model_url: str,
    slack_url: str,
    config_root: Path | None = None,
) -> dict[str, str | None]:
    config = copy_config(root, case, config_root)
    (root / "home").mkdir()
    gitconfig = root / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Library\n\temail = library@example.invalid\n")
    env: dict[str, str | None] = {
        "HARNESS_HOME": str(root / "harness-home"),
        "HARNESS_WORKSPACE": str(root / "workspace"),
        "HARNESS_CONFIG": str(config),
        "HARNESS_WORKTREES": str(root / "worktrees"),
        "HARNESS_DISPATCH": "record",
        "HARNESS_RUNTIME": runtime,
        "HARNESS_NOW": None,
        "ANTHROPIC_BASE_URL": model_url,
        "ANTHROPIC_API_KEY": SANDBOX_TOKENS["ANTHROPIC_API_KEY"],
        "SLACK_API_URL": slack_url + "/api/",
        "SLACK_USER_TOKEN": SANDBOX_TOKENS["SLACK_USER_TOKEN"],
        "HOME": str(root / "home"),  # the claude CLI keeps its sessions under $HOME/.claude
        "CLAUDE_CODE_MAX_RETRIES": "1",  # an outage case must not wait out ten backoffs
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    env.update(case.setup.env)
    return env


@contextlib.contextmanager
def _environment(values: dict[str, str | None]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = run(list(argv))
    return code, out.getvalue()


def _run(
    case: LibraryCase, runtime: str, root: Path, emu: AnthropicEmulator, slack: SlackEmulator
) -> Observed:
    code, out = _cli("init")
    if code != 0:
        raise RuntimeError(f"harness init exited {code}: {out}")
    ticket = root / "ticket.txt"
    ticket.write_text(f"{case.setup.ticket or TICKET} ({CASE_ID})\n")
    code, out = _cli("case", "new", "--project", "team-a", "--id", CASE_ID, "--title",
                     f"{CASE_ID}: {case.id}", "--text", str(ticket))  # fmt: skip
    if code != 0:
        raise RuntimeError(f"harness case new exited {code}: {out}")
    started = time.monotonic()
    code, out = _cli("investigate", CASE_ID, "--json")
    wall = time.monotonic() - started
    data = _data(out) or _refusal(out)
    folder = root / "workspace" / "case-workspaces" / CASE_ID
    line = str(data.get("exit_line", ""))
    seen = Observed(
        runtime=runtime,
        exit=line.split()[0].removeprefix("exit=")
        if line.startswith("exit=")
        else data.get("exit"),  # "waiting": a model outage is not one of the loop's exits
        exit_code=code,
        exit_line=line,
        iterations=int(data.get("iterations", 0)),
        status=_status(folder),
        wall_seconds=wall,
    )
    _read_iterations(seen, folder)
    seen.prompts = _prompts(emu)
    for prompt in seen.prompts:
        head = prompt.split("\nCase ", 1)[0] if GUARD_HEADING in prompt else ""
        seen.prompt_codes |= set(_NOTE_CODE.findall(head))
    seen.codes |= seen.prompt_codes
    seen.dm = [str(m.get("text", "")) for m in slack.messages("D0SELF")]
    seen.analysis = _text(folder / "ANALYSIS.md")
    seen.task = _text(folder / "TASK.md")
    seen.unmatched = [str(u.get("unmatched")) for u in emu.unmatched()]
    if not os.environ.get("HARNESS_EVAL_LEAN") or case.expect.case_show_contains:
        seen.case_show = _cli("case", "show", CASE_ID)[1]
    if not os.environ.get("HARNESS_EVAL_LEAN") or case.expect.review is not None:
        # an eval trial runs `review` only where the case grades it (HARNESS_EVAL_LEAN)
        review_code, review_out = _cli("review", CASE_ID, "--json")
        seen.review_code = review_code
        seen.review_decision = (_data(review_out).get("verdict") or {}).get("decision")
    return seen


def _data(out: str) -> dict[str, Any]:
    try:
        data = json.loads(out.strip().splitlines()[-1]).get("data") if out.strip() else None
    except (ValueError, AttributeError):
        return {}
    return data if isinstance(data, dict) else {}


def _refusal(out: str) -> dict[str, Any]:
    """The one error line of a run that refused before it started (``--json``: ok false)."""
    try:
        body = json.loads(out.strip().splitlines()[-1]) if out.strip() else None
    except ValueError:
        return {}
    if not isinstance(body, dict) or body.get("ok") is not False:
        return {}
    return {"exit": "refused", "exit_line": str(body.get("message", ""))}


def _status(folder: Path) -> str:
    try:
        return str(json.loads((folder / "case.json").read_text())["status"])
    except (OSError, ValueError, KeyError):
        return ""


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


def _read_iterations(seen: Observed, folder: Path) -> None:
    for path in sorted((folder / "iterations").glob("[0-9]*.json")):
        data = json.loads(path.read_text())
        seen.confidences.append(int(data["verdict"]["confidence"]))
        seen.claimed.append(int(data["verdict"].get("claimed_confidence", 0)))
        seen.codes |= {str(v["code"]) for v in data["verdict"]["violations"]}
        reason = str(data.get("reason", ""))
        seen.codes |= {rule for rule in _FORCES if reason.startswith(rule)}
        seen.model_seconds += _model_seconds(data)
        seen.loop_harness_seconds += _harness_seconds(data, ("investigator",))
    for path in sorted((folder / "review").glob("[0-9]*.json")):
        data = json.loads(path.read_text())
        seen.codes |= {str(v["code"]) for v in data["verdict"]["violations"]}
        seen.model_seconds += _model_seconds(data)
        seen.loop_harness_seconds += _harness_seconds(data, ("adversarial-reviewer", "red-team"))


_FORCES = ("CONFIDENCE_FORCE", "CAUSAL_CHAIN_FORCE", "G_BLOCKER_FORCE")


def _model_seconds(record: dict[str, Any], roles: tuple[str, ...] | None = None) -> float:
    calls = record.get("calls", [])
    return float(sum(c.get("seconds", 0.0) for c in calls if roles is None or c["role"] in roles))


def _harness_seconds(record: dict[str, Any], roles: tuple[str, ...]) -> float:
    """An iteration's (a review's) wall time minus its own model calls."""
    return max(0.0, float(record.get("seconds", 0.0)) - _model_seconds(record, roles))


def _prompts(emu: AnthropicEmulator) -> list[str]:
    """The prompt that opened each investigator conversation, in order."""
    marker = "[harness-role: investigator]"
    found: list[str] = []
    for recorded in emu.recorded("/v1/messages"):
        body = recorded.json_body()
        view = RequestView.from_body(body)
        if view.role != "investigator" or view.turn != 0 or not body.get("tools"):
            continue
        first = body["messages"][0]["content"]
        blocks = [first] if isinstance(first, str) else [b.get("text", "") for b in first]
        found += [t for t in blocks if marker in t][:1]
    return found
