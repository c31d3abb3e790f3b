"""The file sandbox of a template: what may be read while its files are fetched and evaluated, and how
messages name paths. Framework-free; the Django side (policies_app/guards/file_sandbox.py) hands in the
roots the operator configured.

The contract:

- A template's files are one *source root*: the checkout of one commit, one extracted archive, or a
  local directory that lies under a root the operator listed (``LocalRoots``). Nothing else on the
  server is a source; ``/``, a relative path or a directory outside the listed roots is refused with
  one message that does not say whether the path exists.
- Every read while evaluating (the file functions, local module sources, the module manifest) resolves
  symbolic links first and must land inside that source root (``confine``, ``is_inside``); a source
  holding a symlink that points outside itself is refused before anything reads it
  (``escaping_link``).
- A message shown to a user names a path relative to the source root (``shown_path``, ``scrub``),
  never a path of the server.
"""

from __future__ import annotations

import os
import posixpath
import re
from typing import Any

from policies_app.iac.records import FrozenRecord

# One message for every local path refused, whether or not it exists: an answer that differed would let
# a template manager probe the server's disk.
LOCAL_SOURCE_REFUSED = (
    "Not a remote git repository (https://, ssh:// or git@host:path): upload the files as an archive "
    "instead. A directory on this server may be used only under a root the operator lists in "
    "LOCAL_REPOSITORY_ROOTS."
)
# How a message names an absolute path that is not inside the source root (it is not echoed back).
OUTSIDE_PATH = "an absolute path outside the template's files"


_set = object.__setattr__


class OutsideTheSource(ValueError):
    """A path leaves the template's source root; the message names it as the template gave it."""


def is_inside(path: str, root: str) -> bool:
    """Whether ``path`` lies in ``root`` once both have their symbolic links resolved."""
    return _lexically_inside(os.path.realpath(path), os.path.realpath(root))


def _lexically_inside(path: str, root: str) -> bool:
    path, root = os.path.normpath(path), os.path.normpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def escapes(relative: str) -> bool:
    """Whether a relative path (``/``-separated) leaves its folder with '..'."""
    normalised = posixpath.normpath(relative)
    return normalised == ".." or normalised.startswith("../")


def confine(root: str, base: str, path: str) -> str:
    """The real absolute path of ``path`` (relative to ``base``, or absolute) when it lies inside
    ``root`` after resolving symbolic links; OutsideTheSource otherwise. Whether the file exists is not
    looked at, so a refused path says nothing about the server's disk."""
    if "\x00" in path:
        raise OutsideTheSource("a path may not contain NUL characters")
    real = os.path.realpath(os.path.join(base, path))
    if not is_inside(real, root):
        raise OutsideTheSource(
            "an absolute path outside the template's files may not be read (give a path relative to "
            "path.module)"
            if os.path.isabs(path)
            else f'the path "{path}" is outside the template\'s files and may not be read'
        )
    return real


def shown_path(path: str, root: str) -> str:
    """How a message names ``path``: as given when relative; relative to the source root when it is an
    absolute path inside it; otherwise not at all."""
    if not os.path.isabs(path):
        return f'"{path}"'
    for candidate, top in ((os.path.normpath(path), os.path.abspath(root)), (path, os.path.realpath(root))):
        if _lexically_inside(candidate, top):
            return f'"{os.path.relpath(candidate, top)}"'
    return OUTSIDE_PATH


def scrub(text: str, root: str, label: str = "") -> str:
    """``text`` with every path under ``root`` written relative to it (prefixed by ``label`` when
    given): what a message may say about where a file is."""
    if not text or not root:
        return text
    tops = sorted({os.path.abspath(root), os.path.realpath(root)}, key=len, reverse=True)
    for top in tops:
        if top == os.sep:
            continue  # a root of "/" would rewrite every path; the caller refuses such a root anyway
        prefix = top.rstrip(os.sep)
        # The root itself (followed by a delimiter or the end), or the root and a path below it; never
        # a longer name that merely starts like it ("/srv/a" in "/srv/ab").
        inside = re.compile(re.escape(prefix) + r"(?:(/+)|(?=[\s'\"`,;:)\]}>]|$))")

        def relative(match: re.Match[str]) -> str:
            under = match.group(1) is not None
            if label:
                return f"{label}/" if under else label
            return "" if under else "."

        text = inside.sub(relative, text)
    return text


def escaping_link(root: str) -> str | None:
    """The first symbolic link under ``root`` that resolves outside it (relative to ``root``), else None."""
    top = os.path.realpath(root)
    for folder, directories, files in os.walk(root):
        for name in [*directories, *files]:
            entry = os.path.join(folder, name)
            if os.path.islink(entry) and not _lexically_inside(os.path.realpath(entry), top):
                return os.path.relpath(entry, root)
    return None


def relative_document(document: dict[str, Any], root: str, *others: tuple[str, str]) -> dict[str, Any]:
    """An evaluated configuration's document with its diagnostics naming files relative to ``root``
    (the template's source root), and any path under the (directory, label) pairs ``others`` replaced
    by its label. Values are left alone: they are what policies decide on."""
    diagnostics = []
    for diagnostic in document.get("diagnostics", []):
        diagnostic = dict(diagnostic)
        where = diagnostic.get("file")
        if isinstance(where, str) and os.path.isabs(where):
            shown = shown_path(where, root)
            diagnostic["file"] = shown.strip('"') if shown != OUTSIDE_PATH else None
        for key in ("summary", "detail"):
            if isinstance(diagnostic.get(key), str):
                text = scrub(diagnostic[key], root)
                for directory, label in others:
                    text = scrub(text, directory, label)
                diagnostic[key] = text
        diagnostics.append(diagnostic)
    return {**document, "diagnostics": diagnostics}


# A remote git location: a URL of a network transport, or scp-like ``user@host:path`` (the host a name or
# a bracketed IPv6 address). The one spelling of it: the egress guard and the git mirrors read it too.
_REMOTE_URL = re.compile(r"^(?:https?|ssh|git|git\+ssh|ssh\+git)://", re.IGNORECASE)
SCP_LIKE = re.compile(r"^(?P<user>[\w.+-]+)@(?P<host>[\w.-]+|\[[0-9a-fA-F:.]+\]):(?P<path>[^\s]+)$")


def local_location(repository: str) -> str | None:
    """The path on this server that ``repository`` names (a path or a ``file://`` URL), or None when it
    is a remote URL."""
    if _REMOTE_URL.match(repository) or SCP_LIKE.match(repository):
        return None
    if repository[:5].lower() == "file:":
        from urllib.parse import unquote, urlsplit  # only for file:// sources: not at start-up

        parts = urlsplit(repository)
        # file://host/path names another machine's path: not a local directory we could check.
        return unquote(parts.path) if parts.netloc in ("", "localhost") else repository
    return repository


class LocalRoots(FrozenRecord):
    """Where on this server a template's (or a policy repository's) files may come from.

    ``allowed``: the roots the operator listed; a local source must lie under one of them, by its path as
    written and once its symbolic links are resolved. ``forbidden``: the platform's own files (its code,
    data directory, caches, database): never a source, nor inside one, even under an allowed root."""

    allowed: tuple[str, ...]
    forbidden: tuple[str, ...]

    _fields = ("allowed", "forbidden")

    def __init__(self, allowed: tuple[str, ...] = (), forbidden: tuple[str, ...] = ()) -> None:
        _set(self, "allowed", allowed)
        _set(self, "forbidden", forbidden)

    def refusal(self, path: str) -> str | None:
        """Why ``path`` may not be a source (LOCAL_SOURCE_REFUSED), or None when it may."""
        if not path or not os.path.isabs(path) or "\x00" in path:
            return LOCAL_SOURCE_REFUSED
        written, real = os.path.normpath(path), os.path.realpath(path)
        under_a_root = any(
            os.path.realpath(root) != os.sep
            and _lexically_inside(written, os.path.abspath(root))
            and _lexically_inside(real, os.path.realpath(root))
            for root in self.allowed
        )
        if not under_a_root:
            return LOCAL_SOURCE_REFUSED
        for kept in self.forbidden:
            kept_real = os.path.realpath(kept)
            if _lexically_inside(real, kept_real) or _lexically_inside(kept_real, real):
                return LOCAL_SOURCE_REFUSED
        return None


NO_LOCAL_SOURCES = LocalRoots()
