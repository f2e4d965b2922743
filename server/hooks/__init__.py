"""Agent hooks: the ``living-memory hook`` front door that Claude Code, Cursor and Codex run at
their lifecycle events (session start, prompt, edit, turn end), with its warm daemon and its
installer. Importing this package loads nothing heavy: the hook command must start fast."""
