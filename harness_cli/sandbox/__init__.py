"""Local emulators of Slack (Web API + Socket Mode), GitLab REST v4 and the Anthropic Messages
API, served over real HTTP on 127.0.0.1, for tests, ``harness sandbox`` and ``harness demo``."""
