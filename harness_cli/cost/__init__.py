"""The cost meter: every model call priced once, logged once, summed anywhere.

- ``prices``: the price table (harness.yaml ``cost.prices``) and ``price_usd``.
- ``meter``: ``record(...)`` one call into the append-only day logs under
  ``$HARNESS_HOME/logs/cost/``, ``scope(...)`` to say whose call it is (case, workflow, run,
  iteration), ``totals(...)`` to sum them.
- ``budgets``: per case, per workflow run, per day (tokens and $), checked before each call.

The runtime wrapper that applies them to every model call (the one choke point) is
``agents/metered.py``: it wraps a runtime, so it sits with the runtimes.

The reference names the gap: "There's no cost meter. Token usage is tracked loosely and isn't
surfaced on a dashboard" (002, "Where it's deliberately thin").
"""
