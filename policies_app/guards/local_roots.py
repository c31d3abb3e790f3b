"""Local repositories: a local path (or ``file://`` URL) is a repository only under a directory the
operator lists (``LOCAL_REPOSITORY_ROOTS``, empty by default); anything else would let whoever may name a
repository read the server (the platform's own checkout, other repositories' mirrors, ``/``).

No Django here (the framework-free git code calls it with the roots). The answer never depends on
whether the path exists, so a refusal tells nothing about the server's disk.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from urllib.parse import unquote, urlsplit

REFUSED = "Local repositories are not allowed here: give an https:// or ssh:// URL."


def is_local_location(location: str) -> bool:
    """Whether a repository location names this server's disk (an absolute path or a file:// URL)."""
    location = (location or "").strip()
    return location.startswith("/") or location.lower().startswith("file:")


def local_repository_path(location: str, roots: Sequence[str]) -> str | None:
    """The real path (symlinks resolved) of a local location when it lies inside one of ``roots``, else
    None. A ``file://`` URL naming another host is not local and is refused."""
    location = (location or "").strip()
    if location.lower().startswith("file:"):
        parts = urlsplit(location)
        if parts.netloc not in ("", "localhost"):
            return None
        location = unquote(parts.path)
    if not location.startswith("/"):
        return None
    real = os.path.realpath(location)
    for root in roots:
        real_root = os.path.realpath(root)
        if real == real_root or real.startswith(real_root.rstrip("/") + "/"):
            return real
    return None
