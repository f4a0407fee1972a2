"""The outbox (floor): the one way out, and nothing owed forgotten (issue #20). One folder
under the name ``$HARNESS_HOME/outbox/`` and the README use.

- :mod:`outbound` — the door: every Slack write passes the allowlist, the redaction and the
  own-post marking here.
- :mod:`notify` — the terminal-event DMs, each through the door.
- :mod:`ledger` — one file per obligation (a post, an edit, a reaction, a GitLab note owed),
  written before it is attempted, moved to ``done/`` when the service confirmed it.
- :mod:`scope` — whose obligation it is: the run (or the message, or the event) that owes it,
  so a resumed run finds what its killed predecessor already sent instead of sending it again.
- :mod:`slack_door` / :mod:`gitlab_door` / :mod:`jira_door` — delivery, with a lookup of a
  write whose answer was lost (the key travels in the Slack post's metadata, in a GitLab note's
  hidden marker, in a Jira comment property).
- :mod:`flush` — the next run of anything that owns the case, poll-slack and mr-monitor retry
  what is still owed; past a bounded number of attempts the operator is told once.
- :mod:`thresholds` — the numbers (``harness.yaml``'s ``obligations:`` section).

The run journal is :mod:`harness_cli.dispatch.journal`; the recovery of dead runs is in
:mod:`harness_cli.workflows`.
"""
