"""The production cache (policy_platform/redis_cache.py) keeps one redis client per connection pool
instead of making one per call (issue 17: a quarter of a poll's CPU), against a real Redis server:
values go and come back, a throttle counts there, and a restarted Redis is used again at once."""

from policy_platform.redis_cache import KeptClientRedisCache
from tests.processes import RedisServer


def test_the_cache_keeps_its_client_and_survives_a_redis_restart(tmp_path):
    redis = RedisServer(tmp_path)
    redis.start()
    try:
        cache = KeptClientRedisCache(redis.url, {})
        client = cache._cache.get_client(write=True)
        assert cache._cache.get_client(write=False) is client, "one client for the one server"
        cache.set("history", {41: 2, 42: 1}, 60)
        assert cache.get("history") == {41: 2, 42: 1}
        assert cache.incr("count", 1) if cache.add("count", 0) else False
        redis.stop()
        redis.start()  # everything it held is gone; its kept connections are dead
        for _ in range(2):  # the first call may meet a dead connection; redis-py reconnects after it
            try:
                cache.set("after", "restart", 60)
                break
            except Exception:  # noqa: BLE001 - the connection error redis-py raises once
                continue
        assert cache.get("after") == "restart" and cache.get("history") is None
        assert cache._cache.get_client(write=True) is client
    finally:
        redis.stop()
