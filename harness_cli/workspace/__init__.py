"""Case workspaces: the durable, git-synced layer of the harness state (case-workspaces/<id>/)."""
