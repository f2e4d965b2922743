"""The hook client's limits and the application's name: a module with no imports, so that the
fast path (:mod:`server.hooks.fast`) knows them without loading anything."""

MAX_INPUT = 8_000_000  # bytes of an event read from stdin
CONNECT_SECONDS = 0.25
ANSWER_SECONDS = 2.0  # how long a prompt's answer may take the daemon before nothing is said
APP_NAME = "living-memory"
