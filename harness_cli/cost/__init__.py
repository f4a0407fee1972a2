"""The cost meter: every model call priced once, logged once, summed anywhere.

- ``prices``: the price table (harness.yaml ``cost.prices``) and ``price_usd``.
- ``meter``: ``record(...)`` one call into the append-only day logs under
  ``$HARNESS_HOME/logs/cost/``, ``scope(...)`` to say whose call it is (case, workflow, run,
  iteration), ``totals(...)`` to sum them.
- ``budgets``: per case, per workflow run, per day (tokens and $), checked before each call.
- ``metered``: the runtime wrapper the factory puts around every runtime (the one choke point).

The reference names the gap: "There's no cost meter. Token usage is tracked loosely and isn't
surfaced on a dashboard" (002, "Where it's deliberately thin").
"""
