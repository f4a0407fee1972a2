"""The table of workflows: what ``dispatch`` starts (with ``--payload FILE``), each run under
:func:`harness_cli.workflows.runner.run` — the pause gate, the per-(workflow, case) lock
(a second concurrent start exits 3), the work session, the journal and repair, the cost scope.

Lazy like the CLI's table: a row names its core entry as ``module:function`` and nothing is
imported until :func:`entry` is asked for it."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from harness_cli.dispatch.run import Outcome, Run

Entry = Callable[[Run], Outcome]
"""A workflow's entry: the run in, what it came to out."""

WORKFLOWS: dict[str, str] = {
    "investigate": "harness_cli.investigation.run:investigate_workflow",
    "review": "harness_cli.investigation.run:review_workflow",
    "followup": "harness_cli.memory.followup:followup_workflow",
    "dev-agent": "harness_cli.delivery.run:dev_agent_workflow",
    "consolidate": "harness_cli.memory.consolidate:consolidate_workflow",
    "finalize": "harness_cli.improvement.finalize:finalize_workflow",
}


def entry(workflow: str) -> Entry:
    """The core entry of one workflow, imported now."""
    module, _, name = WORKFLOWS[workflow].partition(":")
    found: Entry = getattr(importlib.import_module(module), name)
    return found
