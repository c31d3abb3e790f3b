"""On-disk cache of parsed configuration files, keyed by content.

An entry holds one syntax_nodes.File pickled WITHOUT its path: every position's file name is written as a
reference to a global that the unpickler binds to the requested path, so the same content under
another path (a module used from two places, a renamed file) reuses the parse at no extra cost.

Entries are checked before use and anything unexpected is treated as a miss (and overwritten): wrong
magic, another parser version (the version is a hash of the parsers' own source, python-hcl2's
grammar and the ast node layout, so any change to them invalidates old entries), a bad checksum
(truncated or damaged file), a pickle that fails or that is not an syntax_nodes.File. Unpickling is restricted
to ast classes, so a foreign pickle cannot run code.

Speed: nodes are pickled as ``(class, (field values...))`` through a private dispatch table (not
copyreg, which would change pickling for the whole process). Measured on the wide benchmark, that is
twice as fast to write and to load as the default reduction of slotted classes (a dict of slot names
per object).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import io
import os
import pickle
import threading
import zlib
from operator import attrgetter

from policies_app.iac import syntax_nodes

MAGIC = b"IACAST1\n"

# Every node class (and Pos): their ``__slots__`` are their fields, in order.
_AST_CLASSES = {
    name: obj
    for name, obj in vars(syntax_nodes).items()
    if isinstance(obj, type) and obj.__module__ == syntax_nodes.__name__ and getattr(obj, "__slots__", ())
}


def _reducer(cls: type):
    names = cls.__slots__
    if len(names) == 1:
        get_one = attrgetter(names[0])
        return lambda obj: (cls, (get_one(obj),))
    get_all = attrgetter(*names)
    return lambda obj: (cls, get_all(obj))


_DISPATCH = {cls: _reducer(cls) for cls in _AST_CLASSES.values()}

_version: bytes | None = None


@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while building many small objects.

    Parsing or unpickling a big file creates ~10^5 nodes, none of them garbage; every 700 allocations
    the collector would scan them all again. Pausing it makes loading the cache about 4x faster.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parser_version() -> bytes:
    """A short hash naming everything that decides what a parse produces."""
    global _version
    if _version is None:
        digest = hashlib.sha256()
        here = os.path.dirname(os.path.abspath(__file__))
        for name in (
            "template_syntax.py",
            "hcl_native.py",
            "hcl_descent.py",
            "hcl_lalr.py",
            "hcl_json.py",
            "json_positions.py",
            "parse_cache.py",
        ):
            try:
                with open(os.path.join(here, name), "rb") as f:
                    digest.update(f.read())
            except OSError:
                digest.update(name.encode())
        # python-hcl2's grammar is named by hcl_lalr.py's first line (a hash of the grammar and of Lark,
        # checked by tests/engine/test_iac_generated_parser.py), hashed above with the file.
        for name in sorted(_AST_CLASSES):
            fields = ",".join(_AST_CLASSES[name].__slots__)
            digest.update(f"{name}({fields})".encode())
        _version = digest.hexdigest()[:32].encode()
    return _version


def content_key(data: bytes, kind: str) -> str:
    """The cache key of a file's bytes read as ``kind`` ("native" or "json")."""
    return hashlib.sha256(kind.encode() + b"\0" + data).hexdigest()


class _ThePath:
    """Stands for the file's path in a pickle: pickled as a reference to a global (``<module>.THE_PATH``)
    that the unpickler binds to the requested path. A ``persistent_id`` method would do the same, but
    pickle calls it for every object written (a Python call each: half the cost of pickling a file)."""

    def __reduce__(self):
        return _PATH_GLOBAL


_PATH_GLOBAL = "THE_PATH"
THE_PATH = _ThePath()
_POS_CLASS = syntax_nodes.Pos
_FILE_CLASS = syntax_nodes.File


class _Pickler(pickle.Pickler):
    def __init__(self, stream, path: str) -> None:
        super().__init__(stream, protocol=5)
        dispatch = dict(_DISPATCH)
        # identity, not equality: only the path object the parser stored in positions is replaced
        dispatch[_POS_CLASS] = lambda p: (
            _POS_CLASS,
            (THE_PATH if p.file is path else p.file, p.line, p.column),
        )
        dispatch[_FILE_CLASS] = lambda f: (_FILE_CLASS, (THE_PATH if f.path is path else f.path, f.body))
        self.dispatch_table = dispatch


class _Unpickler(pickle.Unpickler):
    def __init__(self, stream, path: str) -> None:
        super().__init__(stream)
        self._path = path

    def find_class(self, module, name):
        if module == __name__ and name == _PATH_GLOBAL:
            return self._path
        if module == syntax_nodes.__name__ and name in _AST_CLASSES:
            return _AST_CLASSES[name]
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in the parse cache")


def dumps_file(parsed: syntax_nodes.File) -> bytes:
    """A path-independent pickle of ``parsed`` (positions must use the File's own path object)."""
    buf = io.BytesIO()
    _Pickler(buf, parsed.path).dump(parsed)
    return buf.getvalue()


def loads_file(blob: bytes, path: str) -> syntax_nodes.File:
    parsed = _Unpickler(io.BytesIO(blob), path).load()
    if type(parsed) is not syntax_nodes.File:
        raise pickle.UnpicklingError("not a parsed configuration file")
    return parsed


def _entry_path(cache_dir: str, key: str) -> str:
    return os.path.join(cache_dir, key[:2], key + ".ast")


def load(cache_dir: str, key: str, path: str) -> syntax_nodes.File | None:
    """The cached parse for ``key`` bound to ``path``, or None when absent or unusable."""
    try:
        with open(_entry_path(cache_dir, key), "rb") as f:
            data = f.read()
    except OSError:
        return None
    version = parser_version()
    header = MAGIC + version
    if not data.startswith(header) or len(data) < len(header) + 4:
        return None
    crc = int.from_bytes(data[len(header) : len(header) + 4], "big")
    blob = memoryview(data)[len(header) + 4 :]
    if zlib.crc32(blob) != crc:
        return None
    try:
        return loads_file(blob, path)
    except Exception:  # a damaged entry of any kind is a miss, never an error for the user
        return None


def store_blob(cache_dir: str, key: str, blob: bytes) -> None:
    """Write an entry atomically (temp file + rename); a cache that cannot be written is skipped.

    The temporary name is the entry's own plus this process's and thread's ids, created exclusively
    (O_EXCL): the tempfile module would import random and shutil (with bz2 and lzma), ~8 ms of every
    cold run."""
    target = _entry_path(cache_dir, key)
    tmp = f"{target}.tmp-{os.getpid()}-{threading.get_ident()}"
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # left by a dead process with our ids: ours now
            os.unlink(tmp)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + parser_version() + zlib.crc32(blob).to_bytes(4, "big"))
                f.write(blob)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        pass


def store(cache_dir: str, key: str, parsed: syntax_nodes.File) -> bytes:
    blob = dumps_file(parsed)
    store_blob(cache_dir, key, blob)
    return blob
