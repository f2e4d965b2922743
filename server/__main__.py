"""``python -m server`` runs the command line."""

import sys

from server.cli import main

sys.exit(main())
