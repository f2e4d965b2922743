"""The hook command as installed: ``python -S -P …/server/hooks/launch.py EVENT --client C``.

Started without ``site`` (``-S``), the interpreter skips the scan of site-packages and their
``.pth`` files, which is most of its start. The client needs only the standard library, so
this adds the folder that holds the ``server`` package to the path and goes on; whatever needs
more (an answer without the daemon, the data directory from ``platformdirs``) loads the site
first (:func:`server.hooks.where.full_site`).
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0] or os.curdir) == _HERE:
    del sys.path[0]  # without -P (Python 3.10) the script's folder would shadow modules
sys.path.append(os.path.dirname(os.path.dirname(_HERE)))

from server.hooks.entry import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
