"""The ablatable components of the harness, in one registry, and the one switch the code
consults at each component's point: ``components.enabled("red_team")``.

003, "Mesurer une seule modification à la fois": an ablation changes one component and keeps
everything else fixed. Each component here is a part whose worth an eval can measure by
turning it off; ``locator`` says where its switch is read (the behaviour map pins it).

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


_ALL = (
    Component("g_gates", "G1-G4: logical consistency between rounds (G-gates)",
              "harness_cli/investigation/gates/__init__.py::family_on", ("investigation",)),
    Component("n_gates", "N1-N3, N5: structural completeness (N-gates)",
              "harness_cli/investigation/gates/__init__.py::family_on", ("investigation",)),
    Component("a_gates", "A1-A6: mechanical ceilings incl. the A1 confidence cap (A-gates)",
              "harness_cli/investigation/gates/ceiling.py::claim_ceiling", ("investigation",)),
    Component("spot_checks", "EQ1 (60 % cap without HARD evidence) and P7 (review penalty)",
              "harness_cli/investigation/gates/ceiling.py::claim_ceiling", ("investigation",)),
    Component("force_rules", "CONFIDENCE_FORCE, CAUSAL_CHAIN_FORCE, G_BLOCKER_FORCE",
              "harness_cli/investigation/rules.py::_natural", ("investigation",)),
    Component("adversarial_reviewer", "the adversarial review D1-D15 (its call and verdict)",
              "harness_cli/investigation/reviewer.py::review", ("investigation",)),
    Component("red_team", "the isolated red-team review G5 (its call and verdict)",
              "harness_cli/investigation/reviewer.py::review", ("investigation",)),
    Component("precommit_lock", "the pre-commitment hypothesis slate and its lock",
              "harness_cli/investigation/loop.py::Loop._slate", ("investigation",)),
    Component("empirical_anchor", "Phase C: OS facts in the first prompt",
              "harness_cli/investigation/loop.py::Loop._run", ("investigation",)),
    Component("context_pinning", "A7: contradictions and assumptions pinned to each prompt",
              "harness_cli/investigation/loop.py::Loop._run", ("investigation",)),
    Component("acceptance", "fail-closed acceptance: an MR is ready only on a passing record",
              "harness_cli/delivery/acceptance.py::accepts_head", ("delivery",)),
    Component("reply_gate", "'Done, updated' only when the push exited 0",
              "harness_cli/delivery/reply_gate.py::reply_gate", ("delivery",)),
    Component("push_recovery_l2", "L2 agentic self-heal of a failed push",
              "harness_cli/delivery/push/recovery.py::push_with_recovery", ("delivery",)),
)  # fmt: skip
COMPONENTS: dict[str, Component] = {c.name: c for c in _ALL}

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
