"""The on-call investigation loop's deterministic half: the completion report each iteration
ends with (``report``), the quality gates that give its confidence a meaning (``gates``), and
the confidence, force-continue and exit rules that decide what happens next (``rules``).

Everything here is pure: no I/O, no clock, no model. The loop feeds it parsed reports and
records what it returns, which is what keeps the gates ordinary deterministic Python.
"""
