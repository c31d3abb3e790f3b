"""A pytest plugin for the mutation run (bench/bench_mutations.py), loaded with ``-p bench.mutation_plugin``.

mutmut runs the tests of each mutant in a process of its own, several at once. The suite's SQLite test
database is one file (var/test-db.sqlite3, shared with the real servers some tests start): mutants run side
by side would create, write and delete the same file. Each process gets a database in its own memory
instead; the tests the run selects start no server.
"""

from __future__ import annotations


def pytest_sessionstart(session) -> None:
    from django.conf import settings

    for database in settings.DATABASES.values():
        if database["ENGINE"] == "django.db.backends.sqlite3":
            database.setdefault("TEST", {})["NAME"] = ":memory:"
