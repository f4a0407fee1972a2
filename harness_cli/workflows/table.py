"""The table of workflows: what ``dispatch`` starts (with ``--payload FILE``), each run under
:func:`harness_cli.workflows.runner.running` — the pause gate, the per-(workflow, case) lock
(a second concurrent start exits 3), the work session, the journal and repair, the cost scope.

Lazy like the CLI's table: a row names its core entry as ``module:function`` and nothing is
imported until :func:`entry` is asked for it."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

WORKFLOWS: dict[str, str] = {
    "investigate": "harness_cli.investigation.run:investigate_case",
    "review": "harness_cli.investigation.run:review_case",
    "followup": "harness_cli.memory.followup:Followup",
    "dev-agent": "harness_cli.delivery.run:run_dev_agent",
    "consolidate": "harness_cli.memory.consolidate:consolidate_case",
    "finalize": "harness_cli.improvement.finalize:finalize_case",
}


def entry(workflow: str) -> Callable[..., Any]:
    """The core entry of one workflow, imported now."""
    module, _, name = WORKFLOWS[workflow].partition(":")
    found: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return found
