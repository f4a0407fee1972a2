"""Delivery: getting an agent's code change onto the remote, safely.

- ``worktrees`` — ``worktree_manager``: one git worktree per case, checked out from a per-repo
  mirror that no agent ever sees, so a half-finished change stays inside its own case
  (reference: "Worktrees are more than an implementation detail").
- ``push`` — the three-layer recovery for a push: L1 fetch + rebase, L2 a bounded agentic
  self-heal (``push_heal``), L3 one DM to the operator with the whole trail
  (``push_escalation``); L1 and the real push are in ``push_rebase``. The
  exit code of the real ``git push`` is the only success (reference: "Recovering from single
  operations").
- ``thresholds`` — the numbers behind those rules.

The dev-agent, MR and monitor modules next to these build on them.
"""
