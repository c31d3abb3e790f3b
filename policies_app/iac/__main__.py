"""``python -m policies_app.iac DIR``: evaluate a configuration (see cli.py).

Start-up matters here: the platform starts this command for every evaluation. Where the environment
forbids writing bytecode next to the sources (PYTHONDONTWRITEBYTECODE, or a read-only checkout),
Python would compile every module on every start, some 0.1 s; the compiled code is kept in the
user's own cache directory instead, as Lark keeps its grammar tables outside the parse cache.
"""

import os
import sys

if sys.dont_write_bytecode and sys.pycache_prefix is None:
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    sys.pycache_prefix = os.path.join(cache_home, "policies-platform", "bytecode")
    sys.dont_write_bytecode = False

from policies_app.iac.cli import main  # noqa: E402  (after the bytecode location is set)

sys.exit(main())
