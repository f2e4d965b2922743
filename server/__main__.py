"""``python -m server`` runs the command line; ``python -m server serve`` the language server
(dispatched before the command line is imported, so the server starts fast)."""

import sys

if len(sys.argv) > 1 and sys.argv[1] == "serve":
    from server.lsp import main as serve_main

    sys.exit(serve_main(sys.argv[2:]))

from server.cli import main

sys.exit(main())
