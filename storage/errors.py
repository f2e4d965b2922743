"""Errors the store raises; each carries a one-line, user-readable message."""


class StoreError(Exception):
    """Base of every error the storage package raises on purpose."""


class StoreUnavailable(StoreError):
    """The data directory or database file cannot be opened or created."""


class DatabaseCorrupt(StoreError):
    """The file is not a valid database; it is never replaced silently."""


class DatabaseLocked(StoreError):
    """Another process holds the write lock longer than the busy timeout."""


class DatabaseTooNew(StoreError):
    """The schema was written by a newer Living Memory."""


class NotFound(StoreError, KeyError):
    """No memory (or other row) with that id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not found"


class InvalidInput(StoreError, ValueError):
    """A caller passed a value the store refuses (empty text, unknown kind …)."""


class ModelUnavailable(StoreError):
    """The embedding model cannot be loaded."""
