"""Opening the SQLite database through APSW: best practice, WAL, busy timeout, migrations."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import apsw
import apsw.bestpractice

from storage.errors import DatabaseCorrupt, DatabaseLocked, DatabaseTooNew, StoreUnavailable
from storage.schema import MIGRATIONS

DEFAULT_BUSY_TIMEOUT_MS = 5000

_best_practice_applied = False


def _apply_best_practice() -> None:
    global _best_practice_applied
    if not _best_practice_applied:
        # All of the recommended set but SQLite's log forwarding (a refused file would
        # otherwise print SQLite's own log line next to our one-line error) and the two hooks
        # that write on open (WAL switch, optimize): connect() does those itself, once it
        # knows the file is a Living Memory database it may change.
        skip = (
            apsw.bestpractice.library_logging,
            apsw.bestpractice.connection_wal,
            apsw.bestpractice.connection_optimize,
        )
        apsw.bestpractice.apply(tuple(p for p in apsw.bestpractice.recommended if p not in skip))
        _best_practice_applied = True


def busy_timeout_ms() -> int:
    raw = os.environ.get("LIVING_MEMORY_BUSY_TIMEOUT_MS")
    if raw and raw.isdigit():
        return int(raw)
    return DEFAULT_BUSY_TIMEOUT_MS


def connect(path: Path, *, readonly: bool = False) -> apsw.Connection:
    """Open (and migrate) the database at ``path``; raise a StoreError subclass on failure."""
    _apply_best_practice()
    path = Path(path)
    if not readonly:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreUnavailable(
                f"cannot create data directory {path.parent}: {e.strerror}"
            ) from e
        if not os.access(path.parent, os.W_OK):
            raise StoreUnavailable(f"data directory {path.parent} is not writable")
    elif not path.exists():
        raise StoreUnavailable(f"no database at {path}")
    flags = (
        apsw.SQLITE_OPEN_READONLY
        if readonly
        else (apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
    )
    corrupt = f"{path} is not a valid Living Memory database ({{}}); it was left untouched"
    try:
        _check_header(path)
        conn = apsw.Connection(str(path), flags=flags)
    except apsw.CantOpenError as e:
        raise StoreUnavailable(f"cannot open database {path}: {e}") from e
    except (apsw.NotADBError, apsw.CorruptError) as e:
        raise DatabaseCorrupt(corrupt.format(e)) from e
    except apsw.BusyError as e:
        raise DatabaseLocked(f"database {path} is locked by another process") from e
    conn.set_busy_timeout(busy_timeout_ms())
    try:
        conn.pragma("foreign_keys", True)
        if not readonly:
            _check_version(conn)  # refuse a newer or a foreign database before writing
            _check_foreign(conn, path)
            if conn.pragma("journal_mode") != "wal":
                conn.pragma("journal_mode", "wal")
            conn.pragma("synchronous", "normal")
            migrate(conn)
            conn.pragma("optimize", 0x10002)
        else:
            _check_version(conn)
    except (apsw.NotADBError, apsw.CorruptError) as e:
        conn.close()
        raise DatabaseCorrupt(corrupt.format(e)) from e
    except apsw.BusyError as e:
        conn.close()
        raise DatabaseLocked(f"database {path} is locked by another process") from e
    except Exception:
        conn.close()
        raise
    return conn


def _check_header(path: Path) -> None:
    """Refuse a non-empty file that is not SQLite, before SQLite touches it."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except FileNotFoundError:
        return
    except OSError as e:  # a directory, or a file we may not read
        raise StoreUnavailable(f"cannot open database {path}: {e.strerror}") from e
    if head and head != b"SQLite format 3\x00":
        raise apsw.NotADBError("file is not a database")


def _check_foreign(conn: apsw.Connection, path: Path) -> None:
    """Refuse another application's SQLite database: never add our tables to it."""
    if conn.pragma("user_version") != 0:
        return
    tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").get
    if tables:
        raise DatabaseCorrupt(
            f"{path} is an SQLite database of another application, not a Living Memory "
            "database; it was left untouched"
        )


def _check_version(conn: apsw.Connection) -> int:
    version = conn.pragma("user_version")
    if version > len(MIGRATIONS):
        raise DatabaseTooNew(
            f"database schema version {version} is newer than this Living Memory "
            f"understands ({len(MIGRATIONS)}); upgrade living-memory"
        )
    return version


def migrate(conn: apsw.Connection) -> int:
    """Apply pending numbered migrations inside one transaction; return the new version."""
    version = _check_version(conn)
    if version == len(MIGRATIONS):
        return version
    with immediate(conn):
        version = _check_version(conn)  # another process may have migrated meanwhile
        for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
            conn.execute(script)
            conn.pragma("user_version", number)
    return len(MIGRATIONS)


@contextlib.contextmanager
def immediate(conn: apsw.Connection) -> Iterator[apsw.Connection]:
    """A write transaction taken up front (BEGIN IMMEDIATE), rolled back on any error."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except apsw.BusyError as e:
        raise DatabaseLocked("database is locked by another process") from e
    try:
        yield conn
    except BaseException:
        if not conn.in_transaction:
            raise
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


def integrity_ok(conn: apsw.Connection) -> bool:
    rows = conn.execute("PRAGMA quick_check").fetchall()
    return rows == [("ok",)]
