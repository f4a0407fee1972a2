#!/bin/sh
# Claude SessionEnd hook: closes this claude session's work session (its reservations released,
# its outcome report — files changed since it opened — written on the workspace).
"${HARNESS_BIN:-harness}" session close --hook
status=$?
[ "$status" -eq 0 ] || exit 1
exit 0
