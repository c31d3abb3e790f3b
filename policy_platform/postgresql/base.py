"""Django's PostgreSQL backend, with a health check that asks the connection instead of the server.

With ``CONN_HEALTH_CHECKS`` (settings.py) Django tests a kept connection before the first query of each
request with ``SELECT 1``: a round trip, about 0.1 ms of the two processes' CPU on every request, which
for a pipeline's conditional poll (one query, deployments/waiting.py) is a large share of the whole.
A connection that the server dropped (a restart, an administrator's kill, an idle timeout) can be told
without asking: psycopg marks it closed or broken once it has seen the failure, libpq's status is no
longer OK, or the socket has something to read although no query is in flight: the server's
termination message and then end-of-file. Only in that last, rare case is Django's own check (the
``SELECT 1``) run, which decides; a connection with nothing to read, in a good state, is usable.

What this cannot see, Django's query could not have seen any sooner: a server that vanished without
closing the socket (a partition) makes ``SELECT 1`` hang as long as the request's own first query.
tests/ops/test_faults.py restarts PostgreSQL under load: no request fails on a dead kept connection.
"""

from __future__ import annotations

import select

import psycopg
from django.db.backends.postgresql import base
from psycopg import pq


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        connection = self.connection
        if connection is None or connection.closed or connection.broken:
            return False
        pgconn = connection.pgconn
        if pgconn.status != pq.ConnStatus.OK:
            return False
        if pgconn.transaction_status != pq.TransactionStatus.IDLE:
            return super().is_usable()  # inside a transaction or a query: let the query say
        try:
            poller = select.poll()
            poller.register(pgconn.socket, select.POLLIN | select.POLLPRI)
            events = poller.poll(0)
        except (OSError, ValueError, psycopg.Error):  # no socket to ask: let the query say
            return super().is_usable()
        if not events:
            return True  # nothing unsolicited from the server: the connection is as it was left
        if any(flags & (select.POLLERR | select.POLLHUP | select.POLLNVAL) for _fd, flags in events):
            return False
        # Something arrived unasked: a termination notice (then end-of-file), or a notice or
        # notification that leaves it usable. Django's query tells them apart.
        return super().is_usable()
