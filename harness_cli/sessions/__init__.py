"""Work sessions with advisory reservations (reference 004), shared by every runner.

A workflow that changes code or case state runs inside a *work session* the harness opens
(never the agent): it names who works (``harness/<workflow>/<machine>`` or
``claude-code/<user>``), on what (a case, repo elements), with a heartbeat and an expiry. The
reservations live as refs on the workspace remote, taken with a compare-and-swap the remote
enforces (:mod:`board`), so two machines racing for one element get exactly one winner. The
preflight gate (:mod:`gate`) decides allow / warn / deny before anything is cloned; the write
guard (:mod:`guard`) checks what the agent actually changed before push; the outcome report
(:mod:`outcome`) is what the next session on those elements reads.
"""
