#!/bin/sh
# Claude SessionStart hook: opens a work session (claude-code/<user>) on the checkout's repo
# through `harness session open --hook`; who else works there (and the last outcome reports on
# it) comes back as hookSpecificOutput.additionalContext. stdin (the hook event) passes through.
# A SessionStart hook never blocks: any failure becomes exit 1 (shown, not blocking).
"${HARNESS_BIN:-harness}" session open --hook
status=$?
[ "$status" -eq 0 ] || exit 1
exit 0
