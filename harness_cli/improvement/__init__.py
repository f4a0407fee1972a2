"""The self-improvement layer (reference, "The self-improvement layer").

Loop 1, gap → PR: :mod:`finalize` gathers an idle case's gap reports (:mod:`gap_reports`),
drops the false positives and has :mod:`patch_suggester` open one MR against the harness's own
repository. :mod:`gap_patterns` clusters gap reports across cases and hands the largest
clusters to the next finalize.

Loop 2, failure mode → SOP suggestion: :mod:`retrospective` records at a case's end which
failure modes occurred (:mod:`failure_modes`); :mod:`kb_update` tallies each project's last ten
cases into SOP suggestions and alerts. Nothing here is ever applied without a human.
"""
