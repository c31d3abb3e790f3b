"""Queries on the path of every API request and every pipeline's poll, compiled to SQL once per process
and then run with new parameters.

Django builds and compiles a queryset's SQL on every use; for the few small queries each poll makes
(its token, its user's grants, its deployment's status) that compiling costs far more CPU than running
them: 0.3 to 1 ms each, where the whole of ``/healthz`` costs about 0.25 ms (bench/bench_polling.py).
A ``PreparedQuery`` is written as an ordinary queryset, with placeholder values where the parameters
go; its SQL, parameters and the fields' converters are kept, and each run only swaps the parameters in.
The rows are what ``values_list`` would give: the same SQL, converted the same way.

Two refinements for the one query of a pipeline's conditional poll (deployments/waiting.py):

- ``build`` may return several querysets: they are joined side by side (each row of the first beside
  the row of each next, at most one, or NULLs), so that one round trip answers what several would.
- ``server_side=True`` also keeps PostgreSQL from planning it again on every run: the statement is
  PREPAREd once per connection and EXECUTEd after. Django turns psycopg's own prepared statements
  off (for connection poolers), and planning such a query costs PostgreSQL several times what running
  it does (0.2 ms against 0.04). A pooler that moves a session's statements between server connections
  (PgBouncer in transaction mode) would lose them: the production shape connects directly.
"""

from __future__ import annotations

import itertools
import re
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connections
from django.db.models import QuerySet


class PreparedQuery:
    """``build(*placeholders)`` returns a ``values_list`` queryset; ``rows(*values)`` runs its SQL with
    each placeholder replaced by the value in its position. A placeholder must be a value that only
    the parameter itself can produce (an impossible id, a string no one sends) and that the field's
    lookup passes through unchanged (an exact match)."""

    _names = itertools.count(1)

    def __init__(
        self,
        build: Callable[..., QuerySet | tuple[QuerySet, ...]],
        *placeholders: Any,
        server_side: bool = False,
    ) -> None:
        self._build = build
        self._placeholders = placeholders
        self._compiled: dict[str, tuple[str, list[Any], list[list[int]], dict]] = {}
        self._lock = threading.Lock()
        self._server_side = server_side
        self._name = f"prepared_query_{next(self._names)}"
        self._prepared_on: weakref.WeakSet = weakref.WeakSet()  # the connections holding the statement

    def _compile(self, using: str) -> tuple[str, list[Any], list[list[int]], dict]:
        with self._lock:
            if using not in self._compiled:
                built = self._build(*self._placeholders)
                parts, params, converters, offset = [], [], {}, 0
                for queryset in built if isinstance(built, tuple) else (built,):
                    compiler = queryset.query.get_compiler(using=using)
                    sql, part_params = compiler.as_sql()
                    fields = [column[0] for column in compiler.select[: compiler.col_count]]
                    for position, converter in compiler.get_converters(fields).items():
                        converters[offset + position] = converter
                    parts.append(sql)
                    params += part_params
                    offset += compiler.col_count
                sql = parts[0]
                if len(parts) > 1:
                    joined = [f"({part}) AS part_{n}" for n, part in enumerate(parts)]
                    sql = f"SELECT * FROM {joined[0]}" + "".join(
                        f" LEFT JOIN {part} ON 1 = 1" for part in joined[1:]
                    )
                positions = [[i for i, p in enumerate(params) if p == value] for value in self._placeholders]
                if not all(positions):
                    raise ValueError(f"a placeholder of {sql} is not among its parameters {params}")
                self._compiled[using] = (sql, params, positions, converters)
        return self._compiled[using]

    def _execute(
        self, cursor: Any, connection: Any, compiled: tuple, params: list[Any], values: Sequence[Any]
    ) -> None:
        sql, template, positions, _ = compiled
        if not (self._server_side and connection.vendor == "postgresql"):
            cursor.execute(sql, params)
            return
        raw = connection.connection
        if raw not in self._prepared_on:
            # The statement's parameters are the placeholders only ($1 the first, wherever it occurs);
            # the query's constants are written into it. Each run then sends two values, not the
            # twenty-odd the SQL repeats, which the client would quote and the server parse every time.
            slots = {place: number for number, places in enumerate(positions, 1) for place in places}
            occurrence, constants = itertools.count(), []
            bound = len(template) > len(slots)  # constants to bind: "%%" stays escaped for the client

            def numbered(match: re.Match) -> str:
                if match[0] == "%%":
                    return "%%" if bound else "%"
                place = next(occurrence)
                if place in slots:
                    return f"${slots[place]}"
                constants.append(template[place])
                return "%s"

            statement = re.sub(r"%%|%s", numbered, sql)
            cursor.execute(f"PREPARE {self._name} AS {statement}", constants if bound else None)
            self._prepared_on.add(raw)
        cursor.execute(f"EXECUTE {self._name} ({', '.join(['%s'] * len(values))})", list(values))

    def rows(self, *values: Any, using: str = "default") -> list[Sequence[Any]]:
        compiled = self._compiled.get(using) or self._compile(using)
        sql, template, positions, converters = compiled
        params = list(template)
        for places, value in zip(positions, values, strict=True):
            for place in places:
                params[place] = value
        connection = connections[using]
        with connection.cursor() as cursor:
            self._execute(cursor, connection, compiled, params, values)
            rows = cursor.fetchall()
        if not converters:
            return rows
        converted = []
        for row in rows:
            row = list(row)
            for position, (functions, expression) in converters.items():
                value = row[position]
                for function in functions:
                    value = function(value, expression, connection)
                row[position] = value
            converted.append(row)
        return converted
