"""The ablatable components of the harness, in one registry, and the one switch the code
consults at each component's point: ``components.enabled("red_team")``.

003, "Mesurer une seule modification à la fois": an ablation changes one component and keeps
everything else fixed. Each component here is a part whose worth an eval can measure by
turning it off; ``locator`` says where its switch is read (the behaviour map pins it). Each of
the 19 gates can be turned off alone (components ``G1`` … ``P7``; G5 is ``red_team``, D
``adversarial_reviewer``, A7 ``context_pinning``) and its family with it (``g_gates`` …): a
gate runs while every component holding its code is on (``gate_on``).

The switch is driven only by an eval trial: ``harness eval`` writes ``eval-trial.json`` into
the trial's own fresh ``HARNESS_HOME`` (``TRIAL_FILE``), naming the components it turns off.
A production home never holds that file, no environment variable or harness.yaml key can turn
a component off, and a trial that does logs one warning per component it disabled — so an
ablation is never on in production by accident.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from harness_cli import paths

log = logging.getLogger("harness.components")

TRIAL_FILE = "eval-trial.json"
"""Written by the eval runner into a trial's HARNESS_HOME: ``{"ablate": [NAME, …]}``."""


@dataclass(frozen=True)
class Component:
    name: str
    description: str
    locator: str
    """``path::function`` where ``enabled(name)`` is consulted."""
    suites: tuple[str, ...]
    """The eval suites whose cases can see it (a matrix ablates it on these only)."""
    gates: tuple[str, ...] = ()
    """The gate codes (``gates/table.py``) it switches off: a gate runs only while every
    component holding its code is on (``gate_on``), so a family and each of its gates can be
    ablated alone through the same switch."""
    only_through_gates: bool = False
    """It acts only through those gates' verdicts (a violation, a cap that binds): in a
    deterministic trial where none of them fired, the run without it is the same run, step
    for step, so the matrix infers that pair instead of running it (``--exhaustive`` runs
    it). The reviews are not such: turning one off removes a model call."""


def _gate(code: str, what: str, locator: str = "gates/__init__.py::family_on") -> Component:
    """One of the 19 gates alone (its family keeps its own switch)."""
    return Component(code, f"{code} alone: {what}", f"harness_cli/investigation/{locator}",
                     ("investigation",), (code,), True)  # fmt: skip


_FAMILY = "harness_cli/investigation/gates/__init__.py::family_on"
_ALL = (
    Component("g_gates", "G1-G4: logical consistency between rounds (G-gates)",
              _FAMILY, ("investigation",), ("G1", "G2", "G3", "G4"), True),
    Component("n_gates", "N1-N3, N5: structural completeness (N-gates)",
              _FAMILY, ("investigation",), ("N1", "N2", "N3", "N5"), True),
    Component("a_gates", "A1-A6: mechanical ceilings incl. the A1 confidence cap (A-gates)",
              "harness_cli/investigation/gates/ceiling.py::claim_ceiling", ("investigation",),
              ("A1", "A2", "A3", "A4", "A5", "A6"), True),
    Component("spot_checks", "EQ1 (60 % cap without HARD evidence) and P7 (review penalty)",
              "harness_cli/investigation/gates/ceiling.py::claim_ceiling", ("investigation",),
              ("EQ1", "P7"), True),
    _gate("G1", "open questions grew while confidence rose: held", "gates/ceiling.py::g1_cap"),
    _gate("G2", "tension language with an empty contradiction register"),
    _gate("G3", "adjacent problems and unchecked sources as status objects"),
    _gate("G4", "BLOCKED while reachable sources were skipped"),
    _gate("N1", "every fix action has a verify_action"),
    _gate("N2", "a root cause with its evidence"),
    _gate("N3", "COMPLETE carries the user-facing draft_response"),
    _gate("N5", "a verify_action with description, expected outcome and timing"),
    _gate("A1", "the arithmetic confidence cap", "gates/ceiling.py::claim_ceiling"),
    _gate("A2", "no COMPLETE while adjacent problems stay open"),
    _gate("A3", "a non-empty assumption register"),
    _gate("A4", "one action maps to the root cause"),
    _gate("A5", "no COMPLETE without a traced causal chain"),
    _gate("A6", "a destructive action must map to the root cause"),
    _gate("EQ1", "60 % cap without HARD root-cause evidence", "gates/ceiling.py::claim_ceiling"),
    _gate("P7", "the review's FAIL dimensions lower the ceiling", "gates/ceiling.py::p7_ceiling"),
    Component("force_rules", "CONFIDENCE_FORCE, CAUSAL_CHAIN_FORCE, G_BLOCKER_FORCE",
              "harness_cli/investigation/rules.py::_natural", ("investigation",)),
    Component("adversarial_reviewer", "the adversarial review D1-D15 (its call and verdict)",
              "harness_cli/investigation/reviewer.py::review", ("investigation",), ("D",)),
    Component("red_team", "the isolated red-team review G5 (its call and verdict)",
              "harness_cli/investigation/reviewer.py::review", ("investigation",), ("G5",)),
    Component("precommit_lock", "the pre-commitment hypothesis slate and its lock",
              "harness_cli/investigation/loop.py::Loop._slate", ("investigation",)),
    Component("empirical_anchor", "Phase C: OS facts in the first prompt",
              "harness_cli/investigation/loop.py::Loop._run", ("investigation",)),
    Component("context_pinning", "A7: contradictions and assumptions pinned to each prompt",
              "harness_cli/investigation/loop.py::Loop._run", ("investigation",), ("A7",)),
    Component("acceptance", "fail-closed acceptance: an MR is ready only on a passing record",
              "harness_cli/delivery/acceptance.py::accepts_head", ("delivery",)),
    Component("reply_gate", "'Done, updated' only when the push exited 0",
              "harness_cli/delivery/reply_gate.py::reply_gate", ("delivery",)),
    Component("push_recovery_l2", "L2 agentic self-heal of a failed push",
              "harness_cli/delivery/push/recovery.py::push_with_recovery", ("delivery",)),
)  # fmt: skip
COMPONENTS: dict[str, Component] = {c.name: c for c in _ALL}

_HOLDERS: dict[str, tuple[str, ...]] = {}
for _c in _ALL:
    for _code in _c.gates:
        _HOLDERS[_code] = (*_HOLDERS.get(_code, ()), _c.name)

_cache: dict[Path, frozenset[str]] = {}


def disabled() -> frozenset[str]:
    """The components this process's eval trial turns off (empty outside a trial)."""
    path = paths.home() / TRIAL_FILE
    found = _cache.get(path)
    if found is None:
        try:
            names = json.loads(path.read_text(encoding="utf-8")).get("ablate", [])
        except FileNotFoundError:
            names = []
        except (OSError, ValueError, AttributeError):
            # An unreadable trial file turns nothing off: fail towards the full harness.
            log.warning("%s is unreadable: no component is ablated", path)
            names = []
        unknown = sorted(set(names) - set(COMPONENTS))
        if unknown:
            log.warning("%s names unknown components %s: ignored", path, unknown)
        found = _cache[path] = frozenset(n for n in names if n in COMPONENTS)
        for name in sorted(found):
            log.warning("eval trial: component %s is OFF (%s)", name, path)
    return found


def enabled(name: str) -> bool:
    """True unless this eval trial ablates ``name``; an unknown name is a programming error."""
    if name not in COMPONENTS:
        raise KeyError(f"no component {name!r} (see harness_cli/components.py)")
    return name not in disabled()


def gate_on(code: str) -> bool:
    """Gate ``code`` runs in this trial: every component that holds it (its family's switch
    and its own) is on. A code no component holds is a programming error."""
    holders = _HOLDERS.get(code)
    if holders is None:
        raise KeyError(f"no component holds gate {code!r} (see harness_cli/components.py)")
    return all(enabled(name) for name in holders)


def changed_components(control: frozenset[str], treatment: frozenset[str]) -> tuple[str, ...]:
    """The components whose switch differs between two variants (each given as the set it
    turns off): 003's ``changed_components``."""
    return tuple(sorted(control ^ treatment))


def validate_pair(control: frozenset[str], treatment: frozenset[str]) -> str:
    """The one component a pair measures; a pair that differs in none or in more than one
    component is refused (ValueError naming them)."""
    unknown = sorted((control | treatment) - set(COMPONENTS))
    if unknown:
        raise ValueError(f"unknown component(s) {unknown}: see `harness eval --help`")
    diff = changed_components(control, treatment)
    if len(diff) != 1:
        raise ValueError(
            f"an ablation pair must differ in exactly one component, this one differs in "
            f"{len(diff)}: {', '.join(diff) or 'none'}"
        )
    return diff[0]
