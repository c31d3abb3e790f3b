"""Django's Redis cache, with one redis client per connection pool kept for the process's life.

Django's ``RedisCacheClient.get_client`` makes a new ``redis.Redis`` for every cache call; redis-py
fills each new one's table of about 170 response callbacks, about 0.14 ms of CPU, more than the round
trip itself. An API request's throttle reads and writes the cache (two calls), so that was a quarter
of the CPU of a waiting pipeline's poll (issue 17, bench/bench_scale.py --only polling). A
``redis.Redis`` is safe to share between threads (each command takes a connection from the pool), and
its pool starts afresh in a forked process, so one per pool does what a new one per call did.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient


class KeptClientRedisCacheClient(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            # Two threads may both make one: either is as good, and the pool is the same.
            client = self._clients[index] = self._client(connection_pool=self._get_connection_pool(write))
        return client


class KeptClientRedisCache(RedisCache):
    def __init__(self, server: Any, params: dict) -> None:
        super().__init__(server, params)
        self._class = KeptClientRedisCacheClient
