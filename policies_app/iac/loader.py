"""A module directory -> its configuration files, parsed, with precedence and overrides applied.

What is a module's configuration (as Terraform and OpenTofu read it):
- files ending ``.tf``, ``.tofu``, ``.tf.json``, ``.tofu.json``; hidden files (``.x.tf``), editor
  backups (``x.tf~``) and Emacs lock files (``#x.tf#``) are ignored;
- ``x.tofu`` replaces ``x.tf`` and ``x.tofu.json`` replaces ``x.tf.json`` (the replaced file is listed
  in ``ignored``);
- override files (``override.tf``, ``*_override.tf`` and the other three suffixes) are not files of
  their own: their blocks are merged into the blocks they override, file by file in lexical order,
  as https://developer.hashicorp.com/terraform/language/files/override describes (overrides.py).

Speed: parses are cached by content (parse_cache), repeated content within one process is parsed
once (a module called from many places), and when several large files miss the cache they are
parsed in parallel in forked processes.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

from policies_app.iac import parse_cache, syntax_nodes
from policies_app.iac.hcl_native import (
    parse_expression,
    parse_native,
    parse_template,
    parse_traversal,
)
from policies_app.iac.overrides import merge_overrides
from policies_app.iac.records import Record
from policies_app.iac.template_syntax import ConfigSyntaxError

__all__ = [
    "ConfigSyntaxError",
    "ModuleFiles",
    "load_module",
    "parse_expression",
    "parse_file",
    "parse_template",
    "parse_traversal",
]

_SUFFIXES = (".tofu.json", ".tf.json", ".tofu", ".tf")  # longest first: ".tf.json" also ends ".json"

# Parallel parsing pays for its fork, its pool and the result transfer only on big inputs: with the
# recursive-descent parser (~0.4 s CPU for 600 KB, parse and pickle) two workers cost 30% more CPU and,
# on a loaded machine, more wall time too (measured on the bench's wide configuration).
_PARALLEL_MIN_BYTES = 1024 * 1024
_MEMO_MAX_BYTES = 64 * 1024 * 1024


class ModuleFiles(Record):
    directory: str
    files: list[syntax_nodes.File]  # primary files in lexical order, override files already merged in
    ignored: list[str]  # files replaced by a .tofu/.tofu.json file of the same base name
    overrides: list[str]  # override files that were merged, in order

    _fields = ("directory", "files", "ignored", "overrides")

    def __init__(
        self,
        directory: str,
        files: list[syntax_nodes.File],
        ignored: list[str],
        overrides: list[str] | None = None,
    ) -> None:
        self.directory = directory
        self.files = files
        self.ignored = ignored
        self.overrides = list() if overrides is None else overrides


# --------------------------------------------------------------------------------------------------
# Single files
# --------------------------------------------------------------------------------------------------


def _split_name(name: str) -> tuple[str, str] | None:
    """(base name, suffix) of a configuration file name, or None for anything else."""
    if name.startswith(".") or name.endswith("~") or (name.startswith("#") and name.endswith("#")):
        return None
    for suffix in _SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], suffix
    return None


def _kind(path: str) -> str:
    return "json" if path.endswith(".json") else "native"


def _decode(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigSyntaxError(path, line, column, "the file is not valid UTF-8") from None


def _parse_text(text: str, path: str, kind: str) -> syntax_nodes.File:
    if kind == "json":
        from policies_app.iac.hcl_json import parse_json

        return parse_json(text, path)
    return parse_native(text, path)


# In-process memo of path-independent parses: a module used by 50 module calls is parsed once.
_memo: OrderedDict[str, bytes] = OrderedDict()
_memo_bytes = 0
_memo_lock = threading.Lock()


def _memo_get(key: str) -> bytes | None:
    with _memo_lock:
        blob = _memo.get(key)
        if blob is not None:
            _memo.move_to_end(key)
        return blob


def _memo_put(key: str, blob: bytes) -> None:
    global _memo_bytes
    with _memo_lock:
        if key in _memo or len(blob) > _MEMO_MAX_BYTES // 4:
            return
        _memo[key] = blob
        _memo_bytes += len(blob)
        while _memo_bytes > _MEMO_MAX_BYTES and _memo:
            _k, old = _memo.popitem(last=False)
            _memo_bytes -= len(old)


def _parse_here(
    text: str, path: str, kind: str, key: str, cache_dir: str | None
) -> tuple[syntax_nodes.File, bytes]:
    """Parse, and pickle path-independently for the cache and the memo; the parse itself is used as it
    is (unpickling it again would cost a cold run as much as a warm run's whole load)."""
    parsed = _parse_text(text, path, kind)
    blob = parse_cache.dumps_file(parsed)
    if cache_dir:
        parse_cache.store_blob(cache_dir, key, blob)
    return parsed, blob


def _parse_to_blob(text: str, path: str, kind: str, key: str, cache_dir: str | None) -> bytes:
    """The work unit of a parallel worker: what it sends back is the pickle."""
    return _parse_here(text, path, kind, key, cache_dir)[1]


def _lookup(data: bytes, path: str, kind: str, cache_dir: str | None) -> tuple[str, syntax_nodes.File | None]:
    key = parse_cache.content_key(data, kind)
    blob = _memo_get(key)
    if blob is not None:
        return key, parse_cache.loads_file(blob, path)
    if cache_dir:
        parsed = parse_cache.load(cache_dir, key, path)
        if parsed is not None:
            return key, parsed
    return key, None


def parse_file(path: str, *, cache_dir: str | None = None) -> syntax_nodes.File:
    """Parse one configuration file (native or JSON syntax by its extension), from the cache when the
    same content was parsed before."""
    with parse_cache.gc_paused():
        return _parse_file(os.fspath(path), cache_dir)


def _parse_file(path: str, cache_dir: str | None) -> syntax_nodes.File:
    with open(path, "rb") as f:
        data = f.read()
    kind = _kind(path)
    key, parsed = _lookup(data, path, kind, cache_dir)
    if parsed is not None:
        return parsed
    text = _decode(data, path)
    parsed, blob = _parse_here(text, path, kind, key, cache_dir)
    _memo_put(key, blob)
    return parsed


# --------------------------------------------------------------------------------------------------
# Directories
# --------------------------------------------------------------------------------------------------


def _select_files(directory: str) -> tuple[list[str], list[str], list[str]]:
    """(primary names, override names, ignored names), each in lexical order."""
    names = sorted(os.listdir(directory))
    by_base: dict[str, dict[str, str]] = {}
    for name in names:
        split = _split_name(name)
        if split is None or not os.path.isfile(os.path.join(directory, name)):
            continue
        base, suffix = split
        by_base.setdefault(base, {})[suffix] = name
    chosen: set[str] = set()
    ignored: list[str] = []
    for suffixes in by_base.values():
        for tofu, tf in ((".tofu", ".tf"), (".tofu.json", ".tf.json")):
            if tofu in suffixes and tf in suffixes:
                ignored.append(suffixes.pop(tf))
        chosen.update(suffixes.values())
    primary, overrides = [], []
    for name in names:
        if name in chosen:
            base = _split_name(name)[0]
            (overrides if base == "override" or base.endswith("_override") else primary).append(name)
    return primary, overrides, sorted(ignored)


def _default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _parse_many(
    jobs: list[tuple[str, str, str, str]], cache_dir: str | None, workers: int
) -> dict[str, tuple[syntax_nodes.File | None, bytes]]:
    """Parse (text, path, kind, key) jobs -> {path: (the parse when made here, else None; its blob)}; in
    parallel when it pays."""
    total = sum(len(text) for text, *_ in jobs)
    results: dict[str, tuple[syntax_nodes.File | None, bytes]] = {}
    # Forking a process that runs other threads can deadlock the child on a lock one of them held
    # (a web server, a threaded worker): parallel parsing is for single-threaded callers such as the CLI.
    single_threaded = threading.active_count() == 1
    if workers > 1 and len(jobs) > 1 and total >= _PARALLEL_MIN_BYTES and single_threaded:
        bins: list[list[tuple[str, str, str, str]]] = [[] for _ in range(min(workers, len(jobs)))]
        sizes = [0] * len(bins)
        for job in sorted(jobs, key=lambda j: -len(j[0])):
            i = sizes.index(min(sizes))
            bins[i].append(job)
            sizes[i] += len(job[0])
        try:
            results = {path: (None, blob) for path, blob in _parse_parallel(bins, cache_dir).items()}
        except ConfigSyntaxError:
            raise
        except Exception:  # no fork here (daemonic Celery worker, sandbox...): parse in this process
            results = {}
    for text, path, kind, key in jobs:
        if path not in results:
            results[path] = _parse_here(text, path, kind, key, cache_dir)
    return results


def _parse_group(group: list[tuple[str, str, str, str]], cache_dir: str | None) -> dict[str, bytes]:
    with parse_cache.gc_paused():
        return {path: _parse_to_blob(text, path, kind, key, cache_dir) for text, path, kind, key in group}


def _parse_parallel(bins: list[list[tuple[str, str, str, str]]], cache_dir: str | None) -> dict[str, bytes]:
    import multiprocessing  # only big parses need them: a run served from the cache never does
    from concurrent.futures import ProcessPoolExecutor

    results: dict[str, bytes] = {}
    with ProcessPoolExecutor(
        max_workers=len(bins) - 1, mp_context=multiprocessing.get_context("fork")
    ) as pool:
        futures = [pool.submit(_parse_group, group, cache_dir) for group in bins[1:]]
        results.update(_parse_group(bins[0], cache_dir))  # this process takes a share too
        for future in futures:
            results.update(future.result())
    return results


def load_module(directory: str, *, cache_dir: str | None = None, workers: int | None = None) -> ModuleFiles:
    """Load every configuration file of a module directory, apply .tofu precedence and merge override
    files. Raises ConfigSyntaxError (file:line:column) for a file that cannot be parsed or an override
    that Terraform would refuse."""
    with parse_cache.gc_paused():
        return _load_module(os.fspath(directory), cache_dir, workers)


def _load_module(directory: str, cache_dir: str | None, workers: int | None) -> ModuleFiles:
    primary, overrides, ignored = _select_files(directory)
    names = primary + overrides
    parsed: dict[str, syntax_nodes.File] = {}
    jobs: list[tuple[str, str, str, str]] = []
    for name in names:
        path = os.path.join(directory, name)
        with open(path, "rb") as f:
            data = f.read()
        kind = _kind(name)
        key, hit = _lookup(data, path, kind, cache_dir)
        if hit is not None:
            parsed[path] = hit
        else:
            jobs.append((_decode(data, path), path, kind, key))
    if jobs:
        results = _parse_many(jobs, cache_dir, workers if workers is not None else _default_workers())
        for _text, path, _job_kind, key in jobs:
            here, blob = results[path]
            _memo_put(key, blob)
            parsed[path] = here if here is not None else parse_cache.loads_file(blob, path)
    files = [parsed[os.path.join(directory, name)] for name in primary]
    override_files = [parsed[os.path.join(directory, name)] for name in overrides]
    if override_files:
        files = merge_overrides(files, override_files)
    return ModuleFiles(directory, files, ignored, overrides)
