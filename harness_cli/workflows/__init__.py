"""The runner floor (ARCHITECTURE "four floors"): what a workflow run is, above the layers and
below the edge.

- :mod:`table` — the workflows (name → core entry, lazy).
- :mod:`runner` — one run: pause gate → lock → work session → journal + repair → cost scope →
  the entry; the budget DM when a budget ends it.
- :mod:`adopt` / :mod:`unbegun` / :mod:`repair` — recovery of dead runs: a run a kill left
  stranded is resumed, a payload whose run never began is dispatched again, what a dead run
  left on the case is repaired before the next one.
- :mod:`cycle` — what poll-slack and mr-monitor do after their own work: deliver what is owed,
  adopt what was stranded, forget what is old.
"""
