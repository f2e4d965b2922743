"""Where the hooks keep their log, socket and locks: a ``hooks`` folder in the data directory.

Light on purpose (standard library and platformdirs only): the hook's client runs this before
it knows whether it needs the store at all. The data directory is the one
:func:`storage.paths.default_db_path` puts every project's database under.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from server.hooks.limits import APP_NAME

ENV_DATA_DIR = "LIVING_MEMORY_DATA_DIR"  # as storage.paths (importing it loads the store)
LOG_BYTES = 1_000_000


_site_loaded = False


def full_site() -> None:
    """In a process started without ``site`` (the installed hook command's ``python -S``),
    load it now (site-packages, ``.pth`` files): before anything beyond the standard library
    is imported."""
    global _site_loaded
    if sys.flags.no_site and not _site_loaded:
        _site_loaded = True
        import site

        site.main()


def data_dir() -> Path:
    base = os.environ.get(ENV_DATA_DIR)
    if base:
        return Path(base).expanduser()
    try:
        import platformdirs
    except ImportError:  # started without the site, and not installed beside the package
        full_site()
        import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME))


def hooks_dir() -> Path:
    """The hooks' folder (made, private to the user, on first use)."""
    d = data_dir() / "hooks"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def socket_path() -> Path:
    return hooks_dir() / "daemon.sock"


def log_path() -> Path:
    return hooks_dir() / "hooks.log"


def file_logging(level: int | None = None) -> None:
    """Send the ``living_memory`` logs (INFO and up by default) to the hooks' log file (never
    to stdout or stderr: the agent reads stdout and shows stderr). Imported only when a log
    line is due: a warm answer never needs it."""
    import logging
    import logging.handlers

    root = logging.getLogger()
    if any(getattr(h, "_living_memory_hooks", False) for h in root.handlers):
        return
    handler = logging.handlers.RotatingFileHandler(
        log_path(), maxBytes=LOG_BYTES, backupCount=1, encoding="utf-8"
    )
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    )
    handler._living_memory_hooks = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.INFO if level is None else level)
