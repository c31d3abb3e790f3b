"""Queries on the path of every API request and every pipeline's poll, compiled to SQL once per process
and then run with new parameters.

Django builds and compiles a queryset's SQL on every use; for the few small queries each poll makes
(its token, its user's grants, its deployment's status) that compiling costs far more CPU than running
them: 0.3 to 1 ms each, where the whole of ``/healthz`` costs about 0.25 ms (bench/bench_polling.py).
A ``PreparedQuery`` is written as an ordinary queryset, with placeholder values where the parameters
go; its SQL, parameters and the fields' converters are kept, and each run only swaps the parameters in.
The rows are what ``values_list`` would give: the same SQL, converted the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connections
from django.db.models import QuerySet


class PreparedQuery:
    """``build(*placeholders)`` returns a ``values_list`` queryset; ``rows(*values)`` runs its SQL with
    each placeholder replaced by the value in its position. A placeholder must be a value that only
    the parameter itself can produce (an impossible id, a string no one sends) and that the field's
    lookup passes through unchanged (an exact match)."""

    def __init__(self, build: Callable[..., QuerySet], *placeholders: Any) -> None:
        self._build = build
        self._placeholders = placeholders
        self._compiled: dict[str, tuple[str, list[Any], list[list[int]], dict]] = {}
        self._lock = threading.Lock()

    def _compile(self, using: str) -> tuple[str, list[Any], list[list[int]], dict]:
        with self._lock:
            if using not in self._compiled:
                compiler = self._build(*self._placeholders).query.get_compiler(using=using)
                sql, params = compiler.as_sql()
                params = list(params)
                positions = [[i for i, p in enumerate(params) if p == value] for value in self._placeholders]
                if not all(positions):
                    raise ValueError(f"a placeholder of {sql} is not among its parameters {params}")
                fields = [column[0] for column in compiler.select[: compiler.col_count]]
                self._compiled[using] = (sql, params, positions, compiler.get_converters(fields))
        return self._compiled[using]

    def rows(self, *values: Any, using: str = "default") -> list[Sequence[Any]]:
        sql, template, positions, converters = self._compiled.get(using) or self._compile(using)
        params = list(template)
        for places, value in zip(positions, values, strict=True):
            for place in places:
                params[place] = value
        connection = connections[using]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
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
