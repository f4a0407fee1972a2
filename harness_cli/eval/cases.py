"""The misbehaving-model library: scripted investigators and reviewers, honest and not, each
with the ending the harness owes it — kept as data (``evals/investigation/*.yaml``), the eval
corpus a later ``harness eval`` builds on.

One file per case: an ``id``, a one-line ``description``, whether the scripted model is
``honest``, the model (a shipped script by name, or an inline script), the setup (thresholds,
ticket, emulator faults, environment), and a machine-readable ``expect``. ``Observed`` is one
run as a driver saw it (``eval.investigation_driver``, ``eval.delivery_driver``); ``eval.grader``
compares it with the case. Pure: no I/O beyond loading the files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness_cli.agents.policy import ROLES
from harness_cli.errors import ConfigError
from harness_cli.sandbox.model_script import SCRIPTS_DIR, load_script

Runtime = Literal["anthropic", "claude-code"]
RUNTIMES: tuple[Runtime, ...] = ("anthropic", "claude-code")
ExitName = Literal[
    "complete",
    "blocked",
    "stalled",
    "degrading",
    "timeout",
    "failed",
    "budget",
    "waiting",
    "refused",
]
"""The loop's exits, plus ``waiting`` (a model outage: the case is tried again) and ``refused``
(nothing was started: e.g. no credentials, #34 item 5)."""
EVALS_DIR = Path(__file__).resolve().parents[1] / "defaults" / "evals"
"""The eval suites, shipped in the package (``evals/`` in a checkout links here)."""
DEFAULT_DIR = EVALS_DIR / "investigation"
LIVE = "live"
"""``script: live``: no emulator plays the model; the real API answers every role."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Setup(_Strict):
    thresholds: dict[str, int] = Field(default_factory=dict)
    """``investigation:`` numbers for this case's harness.yaml (e.g. max_iterations)."""
    ticket: str | None = None
    """The ticket text; the library's default bulk-discount ticket otherwise."""
    faults: list[dict[str, Any]] = Field(default_factory=list)
    """Anthropic emulator faults (``httpbase.Fault`` fields), injected before the run."""
    env: dict[str, str | None] = Field(default_factory=dict)
    """Environment for the run; None unsets a variable (e.g. ``ANTHROPIC_API_KEY: null``)."""
    runtimes: list[Runtime] = Field(default_factory=lambda: list(RUNTIMES))
    """Where the case applies."""
    config: dict[str, Any] = Field(default_factory=dict)
    """harness.yaml keys for this case, merged into the example config section by section
    (e.g. ``cost: {budgets: {workflow_tokens: 20000}}``)."""


class ReviewExpect(_Strict):
    exit_code: int = 0
    """``harness review``'s exit code (2: no report to review)."""
    decision: str | None = None
    """The verdict's decision after the review."""


class DeliveryExpect(_Strict):
    """The end of a delivery case, from GitLab's and Slack's side and the case folder."""

    status: str | None = None
    """case.json's status."""
    mr_state: str | None = None
    """The MR's state on GitLab (opened, merged, closed); None: not checked."""
    mr_draft: bool | None = None
    """The MR is (still) a draft: not marked ready."""
    acceptance: Literal["pass", "fail", "none"] | None = None
    """The latest acceptance record's verdict (``none``: no record)."""
    replies_contain: list[str] = Field(default_factory=list)
    """Texts the reviewers' threads on the MR must have received."""
    replies_lack: list[str] = Field(default_factory=list)
    """Texts no reply may carry (a "Done" that no push backs)."""
    dm_contains: list[str] = Field(default_factory=list)
    dm_lacks: list[str] = Field(default_factory=list)
    pushed: bool | None = None
    """The case branch reached the remote."""
    last_pipeline: str | None = None
    """The status of the MR branch's newest pipeline (e.g. success)."""
    branch_contains: list[str] = Field(default_factory=list)
    """Text the pushed branch's files must contain (the fix really landed)."""
    forbidden_files: list[str] = Field(default_factory=list)
    """Paths the branch may not touch (e.g. the tests the agent was told to leave alone)."""
    commands_may_fail: list[str] = Field(default_factory=list)
    """Substrings of the scripted model's Bash commands that may end other than run and
    passed (a test run meant to go red). Any other command that was refused, never ran or
    failed fails the case: a step that did not run is never a step that passed."""


class DeliverySetup(_Strict):
    """A delivery case: the sandbox's sample project on the GitLab emulator, a case approved
    for work, and the flow to run."""

    flow: Literal["task", "fix_ci", "address_review", "conflict"]
    """``task``: dev-agent --mode task; ``fix_ci``: the MR's pipeline goes red and mr-monitor
    dispatches fix_ci; ``address_review``: a reviewer comments and mr-monitor dispatches
    address_review; ``conflict``: someone pushes to the branch first, so the push needs L1/L2."""
    review_note: str = "Please add a comment explaining the threshold."
    """The reviewer's comment (address_review)."""
    required_checks: list[str] | None = None
    """The project's required checks (default: the sample project's)."""


class Expect(_Strict):
    exit: ExitName | None = None
    """The investigation's exit name (investigation cases)."""
    exit_code: int = 0
    """``harness investigate``'s exit code."""
    iterations: int | None = None
    exit_note: str | None = None
    """A substring of the exit line's parenthesised note."""
    status: str | None = None
    """case.json's status afterwards."""
    guard_notes: list[str] = Field(default_factory=list)
    """Codes ("A5", "CAUSAL_CHAIN_FORCE", "PRECOMMIT") of the guard notes in a prompt the
    model received (read from the wire, not from the harness's own records)."""
    verdict_codes: list[str] = Field(default_factory=list)
    """Codes the harness's verdicts record though no later prompt carried them (a rule that
    fired on the last round): read from iterations/ and review/, the weaker evidence."""
    no_guard_notes: list[str] = Field(default_factory=list)
    """Codes that must never be raised (e.g. a force rule on an honest run)."""
    confidences: list[int] | None = None
    """The harness's confidence per iteration, in order."""
    trajectory: str | None = None
    """ANALYSIS.md's sparkline, exactly."""
    prompt_contains: dict[int, list[str]] = Field(default_factory=dict)
    """Iteration N's investigator prompt contains each text."""
    prompt_once: dict[int, list[str]] = Field(default_factory=dict)
    """Iteration N's investigator prompt contains each text exactly once."""
    dm_contains: list[str] = Field(default_factory=list)
    """The investigation's post to the operator contains each text."""
    dm_lacks: list[str] = Field(default_factory=list)
    analysis_contains: list[str] = Field(default_factory=list)
    task_lacks: list[str] = Field(default_factory=list)
    case_show_contains: list[str] = Field(default_factory=list)
    review: ReviewExpect | None = None
    delivery: DeliveryExpect | None = None
    """What must hold at the end of a delivery case (``kind: delivery``)."""


class LibraryCase(_Strict):
    schema_version: Literal[1] = 1
    id: str
    description: str
    """One line: what the model does and what it must end in."""
    honest: bool
    """The scripted model tells the truth: the harness must never force or block it wrongly."""
    defect: str = ""
    """Where the case comes from (e.g. "#15 point 3"), if it reproduces a known defect."""
    defective: bool = False
    """The model's work in this case must not be accepted as done: a trial that ends accepted
    (exit=complete, an MR marked ready) counts as "defective accepted"."""
    defective_marks: list[str] = Field(default_factory=list)
    """Texts of a defective conclusion (e.g. the anchored root cause): a trial that ends
    accepted with one of them in what reached the operator or the MR is defective accepted."""
    stochastic: bool = False
    """The model draws from the trial's seed (``behaviours``): the case gets ``--runs``
    trials. A deterministic case runs once per variant — its copies would add no
    information (the machinery eval's unit is the case)."""
    script: str = "inv_honest"
    """The model: a shipped script by name (``harness_cli/sandbox/scripts/<name>.yaml``), or
    ``live`` (``LIVE``): the real API for every role, with the key and endpoint of the
    environment ``harness eval`` runs in (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)…"""
    roles: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    """… with these roles' rules replacing the script's (the part that misbehaves)…"""
    rules_first: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    """… or tried before the script's own rules of that role (one step misbehaves, the rest
    of the role plays as scripted)."""
    captures: dict[str, str] = Field(default_factory=dict)
    """Extra ``{placeholders}`` read from the prompt (the script format's ``captures``)."""
    variables: dict[str, str] = Field(default_factory=dict)
    behaviours: dict[str, float] = Field(default_factory=dict)
    """A stochastic model: behaviours a trial has with these probabilities, drawn from its seed
    (the script format's ``behaviours``; rules say ``when: {behaviour: NAME}``)."""
    models: dict[str, Literal["scripted", "live"]] = Field(default_factory=dict)
    """The model per role where it is not the script: ``{investigator: live}`` has the real API
    (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL of the environment) play the investigator while
    the script plays the reviewers. Roles are the agent roles (``agents.policy.ROLES``)."""
    setup: Setup = Field(default_factory=Setup)
    kind: Literal["investigation", "delivery"] = "investigation"
    """Which subcommands a trial runs: investigate + review, or the delivery flow."""
    delivery: DeliverySetup | None = None
    expect: Expect

    @model_validator(mode="after")
    def _kind(self) -> LibraryCase:
        if self.kind == "investigation" and self.expect.exit is None:
            raise ValueError("an investigation case needs expect.exit")
        if self.kind == "delivery" and (self.delivery is None or self.expect.delivery is None):
            raise ValueError("a delivery case needs delivery: and expect.delivery:")
        self._check_models()
        if self.live:
            scripted = [name for name, value in (
                ("roles", self.roles), ("rules_first", self.rules_first),
                ("behaviours", self.behaviours), ("setup.faults", self.setup.faults),
                ("expect.prompt_contains", self.expect.prompt_contains),
                ("expect.prompt_once", self.expect.prompt_once)) if value]  # fmt: skip
            if scripted:
                raise ValueError(
                    f"a live case has no script to shape or read: drop {', '.join(scripted)}"
                )
        if self.behaviours and not self.stochastic:
            raise ValueError(
                "behaviours: draws from the seed, so the case is stochastic: add stochastic: true"
            )
        return self

    def _check_models(self) -> None:
        unknown = sorted(set(self.models) - set(ROLES))
        if unknown:
            raise ValueError(
                f"models: {unknown[0]!r} is not an agent role (roles: {', '.join(ROLES)})"
            )
        live = self.live_roles
        if live and self.live:
            raise ValueError("script: live already plays every role live: drop models:")
        shaped = sorted(live & (set(self.roles) | set(self.rules_first)))
        if shaped:
            raise ValueError(
                f"role {shaped[0]} is live (models:) and also scripted (roles:/rules_first:): "
                "keep one"
            )

    @property
    def live_roles(self) -> frozenset[str]:
        """The roles the real API plays in an otherwise scripted case (``models:``)."""
        return frozenset(role for role, how in self.models.items() if how == "live")

    @property
    def trials_matter(self) -> bool:
        """Repeated trials carry information: the model is stochastic or live (a model eval)."""
        return self.stochastic or self.needs_api_key

    @property
    def needs_api_key(self) -> bool:
        """Some role of this case is played by the real API."""
        return self.live or bool(self.live_roles)

    @property
    def live(self) -> bool:
        """The real API plays every role (``script: live``)."""
        return self.script == LIVE

    def model_source(self) -> dict[str, Any]:
        """The model script: the named one with this case's roles and captures laid over it."""

        if self.live:
            raise ConfigError(f"library case {self.id} is live: it has no model script")
        path = SCRIPTS_DIR / f"{self.script}.yaml"
        try:
            base = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError:
            raise ConfigError(f"library case {self.id}: no model script {path}") from None
        base["description"] = self.description
        base.setdefault("roles", {}).update(self.roles)
        for role, rules in self.rules_first.items():
            base["roles"][role] = [*rules, *base["roles"].get(role, [])]
        base["captures"] = {**base.get("captures", {}), **self.captures}
        base["behaviours"] = {**base.get("behaviours", {}), **self.behaviours}
        return dict(base)


def load_library(folder: Path = DEFAULT_DIR) -> list[LibraryCase]:
    """Every case under ``folder``, sorted by id; a bad file is one clear ConfigError."""
    cases = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            case = LibraryCase.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
        except (yaml.YAMLError, ValidationError) as exc:
            first = str(exc).splitlines()[0:3]
            raise ConfigError(f"library case {path}: {' '.join(first)}") from None
        if case.id != path.stem:
            raise ConfigError(f"library case {path}: id {case.id!r} must match the file name")

        if not case.live:
            load_script(case.model_source(), case.variables or None)  # a bad script fails here
        cases.append(case)
    return sorted(cases, key=lambda c: c.id)


@dataclass
class Observed:
    """One library run as the runner saw it, from the wire and the disk."""

    runtime: str
    exit: str | None
    exit_code: int
    exit_line: str
    iterations: int
    status: str
    confidences: list[int] = field(default_factory=list)
    codes: set[str] = field(default_factory=set)
    """Every violation code and force rule of every verdict, and every guard-note code of
    every investigator prompt."""
    prompt_codes: set[str] = field(default_factory=set)
    """The guard-note codes of the investigator prompts as the model received them."""
    claimed: list[int] = field(default_factory=list)
    """The model's own confidence per iteration (its report's number, before any cap)."""
    prompts: list[str] = field(default_factory=list)
    """Each iteration's investigator prompt (the turn that opened it), as sent."""
    dm: list[str] = field(default_factory=list)
    analysis: str = ""
    task: str = ""
    case_show: str = ""
    review_code: int | None = None
    review_decision: str | None = None
    unmatched: list[str] = field(default_factory=list)
    model_seconds: float = 0.0
    """Wall time inside the runtime (every model call with its tool calls), from the records."""
    loop_harness_seconds: float = 0.0
    """The harness's own time inside the iterations and reviews: their wall time minus the
    model calls they made (prompt, gates, the lock check, the records written)."""
    wall_seconds: float = 0.0
    """Wall time of the whole `harness investigate` command."""
    usd: float = 0.0
    """What the trial's model calls cost (its cost log)."""
    tokens: int = 0
    delivery: dict[str, Any] = field(default_factory=dict)
    """A delivery case's end state (``eval.delivery_driver``)."""
    commands: list[dict[str, str]] = field(default_factory=list)
    """The scripted model's Bash calls and their fate, from the wire
    (``sandbox.wire_commands``): command, fate (ran, failed, refused, never ran), said."""
