"""Layer 1: how events wake the system — Slack polling, Socket Mode, admin commands, the
pause, routing and PagerDuty, all ending in one dispatch call."""
