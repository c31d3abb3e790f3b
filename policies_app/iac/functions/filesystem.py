"""Filesystem functions: abspath basename dirname pathexpand file fileexists fileset filebase64
templatefile filemd5 filesha1 filesha256 filesha512 filebase64sha256 filebase64sha512.

Reading is confined to the template's source root (the checkout of its commit or its extracted archive,
holding the root module and the local modules it calls, and the module cache under it), after symbolic
links are resolved (iac/file_sandbox.py): a configuration under evaluation must not be able to read the
server's files (``file("/etc/passwd")``, ``file("../../secrets")``, a symlink out). Relative paths
resolve against the working directory, as terraform resolves them. Messages name a path as the
template wrote it, or relative to the source root; never the server's path.
"""

from __future__ import annotations

import base64
import hashlib
import os
import posixpath
import re
from typing import Any

from policies_app.iac.file_sandbox import OutsideTheSource, confine, is_inside, shown_path
from policies_app.iac.functions.base import (
    ArgumentError,
    FunctionContext,
    register,
    want_mapping,
    want_string,
)
from policies_app.iac.values import UNKNOWN, TfSet, contains_unknown, is_unknown

_MAX_FILE_BYTES = 64 * 1024 * 1024


def resolve_path(ctx: FunctionContext, path: str) -> str:
    """The real absolute path, or ArgumentError when it leaves the template's source root."""
    try:
        # "~" is the home of whoever runs the evaluation: a server path, so outside like any other.
        return confine(ctx.source_root, ctx.cwd, os.path.expanduser(path) if path.startswith("~") else path)
    except OutsideTheSource as refused:
        raise ArgumentError(str(refused)) from None


def _shown(ctx: FunctionContext, path: str) -> str:
    return shown_path(path, ctx.source_root)


def _read(ctx: FunctionContext, path: Any) -> bytes:
    text = want_string(path, "the path")
    real = resolve_path(ctx, text)
    if not os.path.isfile(real):
        raise ArgumentError(f"no file exists at {_shown(ctx, text)}")
    if os.path.getsize(real) > _MAX_FILE_BYTES:
        raise ArgumentError(f"the file {_shown(ctx, text)} is larger than {_MAX_FILE_BYTES} bytes")
    with open(real, "rb") as handle:
        return handle.read()


def _read_text(ctx: FunctionContext, path: Any) -> str:
    data = _read(ctx, path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ArgumentError(
            f"contents of {_shown(ctx, path)} are not valid UTF-8; use the filebase64 function to obtain the "
            "Base64 encoded contents or the other file functions (e.g. filemd5, filesha256) to obtain "
            "file hashing results instead"
        ) from None


@register("file", 1, needs_context=True)
def file(ctx: FunctionContext, path: Any) -> str:
    return _read_text(ctx, path)


@register("filebase64", 1, needs_context=True)
def filebase64(ctx: FunctionContext, path: Any) -> str:
    return base64.b64encode(_read(ctx, path)).decode("ascii")


def _hash_file(algorithm: str, encode_base64: bool):
    def implementation(ctx: FunctionContext, path: Any) -> str:
        digest = hashlib.new(algorithm, _read(ctx, path))
        return base64.b64encode(digest.digest()).decode("ascii") if encode_base64 else digest.hexdigest()

    return implementation


for _name, _algorithm, _b64 in [
    ("filemd5", "md5", False),
    ("filesha1", "sha1", False),
    ("filesha256", "sha256", False),
    ("filesha512", "sha512", False),
    ("filebase64sha256", "sha256", True),
    ("filebase64sha512", "sha512", True),
]:
    register(_name, 1, needs_context=True)(_hash_file(_algorithm, _b64))


@register("fileexists", 1, needs_context=True)
def fileexists(ctx: FunctionContext, path: Any) -> bool:
    text = want_string(path, "the path")
    real = resolve_path(ctx, text)
    if not os.path.exists(real):
        return False
    if not os.path.isfile(real):
        raise ArgumentError(
            f"{_shown(ctx, text)} is not a regular file, but "
            f"{'a directory' if os.path.isdir(real) else 'special'}"
        )
    return True


@register("templatefile", 2, unknowns="handled", needs_context=True)
def templatefile(ctx: FunctionContext, path: Any, variables: Any) -> Any:
    # The template is rendered with the unknowns the variables hold: it is unknown only where one lands.
    if contains_unknown(path) or is_unknown(variables):
        return UNKNOWN
    if ctx.render_template is None:
        raise ArgumentError("templates cannot be rendered here")
    variables = want_mapping(variables, "the variables")
    for name in variables:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", name):
            raise ArgumentError(f'invalid template variable name "{name}": must start with a letter')
    text = _read_text(ctx, path)
    return ctx.render_template(text, want_string(path), dict(variables))


# --- fileset: doublestar globbing ------------------------------------------------------------------------


def _glob_to_regex(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**", i) and (i == 0 or pattern[i - 1] == "/"):
            after = i + 2
            if after == len(pattern):
                out.append(".*")
                i = after
                continue
            if pattern[after] == "/":
                out.append("(?:[^/]*/)*")
                i = after + 1
                continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                raise ArgumentError(f'failed to glob pattern "{pattern}": syntax error in pattern')
            body = pattern[i + 1 : end]
            if body[:1] == "^":  # Go's path.Match negates with "^" only; "[!x]" means "!" or "x"
                body = "^/" + body[1:]
            elif body[:1] == "!":
                body = "\\!" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        elif ch == "{":
            end = pattern.find("}", i)
            if end < 0:
                raise ArgumentError(f'failed to glob pattern "{pattern}": syntax error in pattern')
            alternatives = pattern[i + 1 : end].split(",")
            out.append("(?:" + "|".join(_glob_to_regex(a) for a in alternatives) + ")")
            i = end
        elif ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 1
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


_GLOB_META = set("*?[{\\")


@register("fileset", 2, needs_context=True)
def fileset(ctx: FunctionContext, path: Any, pattern: Any) -> TfSet:
    base_text, glob = want_string(path, "the path"), want_string(pattern, "the pattern")
    base = resolve_path(ctx, base_text)
    full_pattern = posixpath.normpath(posixpath.join(base.replace(os.sep, "/"), glob))
    # Walk only from the pattern's literal leading directories ("../shared/*.tpl" walks ../shared), and
    # only as deep as the pattern can reach unless it holds "**": a module's .terraform tree stays unread.
    parts = full_pattern.split("/")
    literal = next((i for i, part in enumerate(parts) if _GLOB_META & set(part)), len(parts))
    walk_root = "/".join(parts[:literal]) or "/"
    root = ctx.source_root
    if not is_inside(walk_root, root):
        raise ArgumentError(f'the pattern "{glob}" reaches outside the template\'s files')
    max_depth = None if "**" in full_pattern else len(parts) - literal - 1
    try:
        matcher = re.compile(_glob_to_regex(full_pattern))
    except ArgumentError:  # its message would quote the pattern joined to the server's directory
        raise ArgumentError(f'failed to glob pattern "{glob}": syntax error in pattern') from None
    found: list[str] = []
    if literal == len(parts):  # no wildcard at all: the pattern names one file
        candidates = [full_pattern] if os.path.isfile(full_pattern) else []
    else:
        candidates = []
        walked: set[str] = set()  # real directories: a symlink back up the tree is walked once, not forever
        for directory, dirnames, filenames in os.walk(walk_root, followlinks=True):
            depth = 0 if directory == walk_root else os.path.relpath(directory, walk_root).count(os.sep) + 1
            keep = max_depth is None or depth < max_depth
            walked.add(os.path.realpath(directory))
            dirnames[:] = sorted(
                d
                for d in dirnames
                if keep
                and is_inside(os.path.join(directory, d), root)
                and os.path.realpath(os.path.join(directory, d)) not in walked
            )
            candidates.extend(os.path.join(directory, name) for name in filenames)
    for candidate in candidates:
        if not matcher.fullmatch(candidate.replace(os.sep, "/")):
            continue
        if os.path.isfile(candidate) and is_inside(candidate, root):
            found.append(os.path.relpath(candidate, base).replace(os.sep, "/"))
    return TfSet(found)


# --- path manipulation (no reading, so not confined) -------------------------------------------------------


def _go_clean(path: str) -> str:
    if path == "":
        return "."
    cleaned = posixpath.normpath(path)
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


@register("abspath", 1, needs_context=True)
def abspath(ctx: FunctionContext, path: Any) -> str:
    text = want_string(path)
    return _go_clean(text if posixpath.isabs(text) else posixpath.join(ctx.cwd, text))


@register("dirname", 1)
def dirname(path: Any) -> str:
    text = want_string(path)
    return _go_clean(text[: text.rfind("/") + 1])


@register("basename", 1)
def basename(path: Any) -> str:
    text = want_string(path).rstrip("/")
    if text == "":
        return "/" if want_string(path).startswith("/") else "."
    return text[text.rfind("/") + 1 :]


@register("pathexpand", 1)
def pathexpand(path: Any) -> str:
    text = want_string(path)
    if text == "~" or text.startswith("~/"):
        return os.path.expanduser("~") + text[1:]
    return text
