"""A pytest plugin for the mutation run (bench/bench_mutations.py), loaded with ``-p bench.mutation_plugin``.

mutmut runs the tests of each mutant in a process of its own, several at once. The suite's SQLite test
database is one file (var/test-db.sqlite3, shared with the real servers some tests start): mutants run side
by side would create, write and delete the same file. Each process gets a database of its own instead: a
copy of the migrated database the bench made once (MUTATION_TEMPLATE_DB, used with --reuse-db: creating
the schema would cost each mutant more than its tests), or one in memory. The selected tests start no
server and none of them is transactional, so the copy is never changed for the next one.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

_copies: list[Path] = []


def pytest_sessionstart(session) -> None:
    from django.conf import settings

    template = os.environ.get("MUTATION_TEMPLATE_DB")
    for database in settings.DATABASES.values():
        if database["ENGINE"] != "django.db.backends.sqlite3":
            continue
        if template:
            copy = Path(template).with_name(f"mutant-{os.getpid()}.sqlite3")
            shutil.copyfile(template, copy)
            _copies.append(copy)
            database.setdefault("TEST", {})["NAME"] = str(copy)
        else:
            database.setdefault("TEST", {})["NAME"] = ":memory:"


def pytest_sessionfinish(session) -> None:
    while _copies:
        copy = _copies.pop()
        for path in (copy, Path(f"{copy}-wal"), Path(f"{copy}-shm")):
            path.unlink(missing_ok=True)
