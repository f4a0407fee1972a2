#!/bin/sh
# Claude UserPromptSubmit hook: syncs this session through the git session store (fetch and
# reset, extract the other machine's delta, push our transcript; under flock) and injects the
# delta as hookSpecificOutput.additionalContext. stdin (the hook event JSON) passes through.
# Exit 2 would make claude block and erase the prompt, so any failure becomes exit 1.
"${HARNESS_BIN:-harness}" session-sync prompt
status=$?
[ "$status" -eq 2 ] && exit 1
exit "$status"
