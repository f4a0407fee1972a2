"""Delivery: getting an agent's code change onto the remote, safely — and believing only the wire.

- ``worktrees`` — ``worktree_manager``: one git worktree per case and repository, checked out
  from a per-repo mirror that no agent ever sees, so a half-finished change stays inside its own
  case (reference: "Worktrees are more than an implementation detail"); ``identity``: who the
  commits are by (never a placeholder).
- ``push/`` — the three-layer recovery for a push (``push/recovery``): L1 fetch + rebase (onto
  the target branch too for a conflict), L2 a bounded agentic self-heal that rates its plan
  before it may touch the tree (``push/heal``), L3 one DM to the operator with the whole trail
  (``push/escalation``); L1 and the real push are in ``push/rebase``, whose ``real_push`` is
  the one pre-push point (``prepush``: every new commit passes the style SOP). The exit code
  of the real ``git push`` is the only success (reference: "Recovering from single
  operations").
- The dev-agent: ``run`` (payload → mode → one message, ``outcome``), ``work`` (the run's
  context), ``dev_agent`` (task), ``ci_fix`` (fix_ci and conflict recovery), ``review``
  (address_review, behind ``reply_gate``), ``change`` (the shared tail), ``acceptance`` +
  ``check_guard`` (fail-closed checks, weakened checks included), ``proof`` and ``mr`` (the MR,
  its proof of work from the acceptance record), ``reopen`` (ways out), ``style``.
- mr-monitor: ``monitor/`` — ``cycle`` (the cycle), ``watch`` (pipelines and target
  branches), ``examine`` / ``decide`` / ``act`` / ``notices``, ``thresholds``.
- ``thresholds`` — the numbers behind the dev-agent's rules.
"""
