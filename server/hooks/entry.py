"""The hook command as an agent runs it: ``python -m server hook EVENT --client C`` answers an
event (see :mod:`server.hooks.fast`, and :mod:`server.hooks.client` for what it does not
handle); ``install``, ``uninstall``, ``serve`` (``serve --stop``) and
``status`` are the command line's (see :mod:`server.hooks.command`). Nothing heavy is
imported here. (``stop`` is not one: it is Cursor's event.)"""

from __future__ import annotations

TYPE_CHECKING = False  # (the typing module is an import a warm answer does without)
if TYPE_CHECKING:
    from collections.abc import Sequence

COMMANDS = frozenset({"install", "uninstall", "serve", "status", "-h", "--help"})


def main(args: Sequence[str]) -> int:
    if args and args[0] in COMMANDS:
        from server.hooks.where import full_site

        full_site()
        from server.hooks.command import main as command_main

        return command_main(list(args))
    from server.hooks.fast import answer

    return answer(args)
