#!/bin/sh
# Claude SessionStart hook: prints the session UUID recorded for this working directory in the
# git session store (as hookSpecificOutput.additionalContext), fetching the store first.
# claude pipes the hook event (JSON) on stdin; it passes straight through to harness.
# Exit 2 would make claude treat the hook as blocking, so any failure becomes exit 1.
"${HARNESS_BIN:-harness}" session-sync start
status=$?
[ "$status" -eq 2 ] && exit 1
exit "$status"
