"""The incident benchmark (#31 item 5): incidents over the sandbox's production world, each a
seeded world state with a ground-truth root cause, the evidence that proves it (which source,
which query) and the right exit, as data (``defaults/evals/incidents/*.yaml``); graded on the
root cause (a rubric; a judge model only in live mode), HARD evidence cited from MCP calls the
world recorded, the exit and the cost meter's figures; summed as pass rate, $/case, p50/p95
latency and the calibration of the harness's final confidence (Brier, ECE).

- ``model``: the incident file's format and the world state it seeds.
- ``investigators``: the scripted reference investigator and a deliberately bad one.
- ``grade``: the rubric, the evidence from the wire, calibration arithmetic, the summary.
- ``run``: the incidents through ``harness investigate`` on the emulators and the world.
"""
