"""The model runtimes: one small Protocol (``runtime.Runtime``), two implementations.

- ``claude_code``: the real ``claude`` CLI as a subprocess, its stream-json parsed live.
- ``anthropic_loop``: the harness's own tool loop over the Messages API (``anthropic`` SDK),
  with the CLI's tool names and shapes (``tools``) so one model script drives both.

Both pass through ``guard``: files changed outside the allowed root are put back after the
run, and the case's ``message.json`` is restored if touched. ``factory.build_runtime`` picks
one by name (``HARNESS_RUNTIME`` / harness.yaml ``runtime``); ``factory.configured_runtime``
wraps it in ``metered`` (budget checked, usage priced and recorded). Nothing here imports
``anthropic`` at module level: it costs seconds and cron-launched commands must not pay it.
"""
