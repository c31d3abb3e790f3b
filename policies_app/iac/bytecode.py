"""Where the evaluator's compiled code is kept when it may not be written beside the sources.

Start-up matters: the platform starts ``python -m policies_app.iac`` for every evaluation. Where the
environment forbids writing bytecode next to the sources (PYTHONDONTWRITEBYTECODE, or a read-only
checkout), Python would compile every module on every start, some 0.1 s. The compiled code is kept in
the user's own cache directory instead (not a shared temporary directory: bytecode found there would be
run), as Lark keeps its grammar tables outside the parse cache.
"""

from __future__ import annotations

import os
import sys


def keep_bytecode_in_user_cache() -> None:
    """Call before importing the evaluator; does nothing where Python writes bytecode as usual."""
    if sys.dont_write_bytecode and sys.pycache_prefix is None:
        cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        sys.pycache_prefix = os.path.join(cache_home, "policies-platform", "bytecode")
        sys.dont_write_bytecode = False
