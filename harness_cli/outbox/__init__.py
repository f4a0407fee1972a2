"""Nothing owed is forgotten (issue #20): the outbox for outward writes, the run journal that
makes every workflow resumable after SIGKILL, and the adoption of stranded work.

- :mod:`ledger` — one file per obligation (a post, an edit, a reaction, a GitLab note owed),
  written before it is attempted, moved to ``done/`` when the service confirmed it.
- :mod:`scope` — whose obligation it is: the run (or the message, or the event) that owes it,
  so a resumed run finds what its killed predecessor already sent instead of sending it again.
- :mod:`slack_door` / :mod:`gitlab_door` — delivery, with a lookup of a write whose answer was
  lost (the key travels in the Slack post's metadata, in a GitLab note's hidden marker).
- :mod:`flush` — the next run of anything that owns the case, poll-slack and mr-monitor retry
  what is still owed; past a bounded number of attempts the operator is told once.
- :mod:`journal` — every workflow run is recorded with its phase; a run killed mid-way is
  resumed (by the next run of the same workflow, or re-dispatched by the next cycle).
"""
