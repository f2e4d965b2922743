"""``python -m server`` runs the command line; ``python -m server serve`` the language server
and ``python -m server hook`` an agent's hook (both dispatched before the command line is
imported, so they start fast; ``mcp`` is dispatched by :mod:`server.launch`)."""

import sys

if len(sys.argv) > 1 and sys.argv[1] == "serve":
    from server.lsp import main as serve_main

    sys.exit(serve_main(sys.argv[2:]))

if len(sys.argv) > 1 and sys.argv[1] == "hook":
    from server.hooks.entry import main as hook_main

    sys.exit(hook_main(sys.argv[2:]))

from server.launch import main

sys.exit(main())
