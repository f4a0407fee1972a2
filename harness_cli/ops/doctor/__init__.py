"""``harness doctor``: :mod:`run` (the order of the checks), :mod:`check` (one finding),
:mod:`install` (config, files, tokens, the claude CLI), :mod:`checks` (this machine: the
schedule, the listener, the workspace remote, the MCP servers), :mod:`services` (who each
token is, the channels, repos and model of the config). No check ever prints a token's value."""
