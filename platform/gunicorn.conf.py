"""gunicorn's configuration for the platform's web process (the web line of platform/Procfile).

Each value can be changed through the environment, so one file serves a laptop, CI and production.
"""

import gc
import os

# honcho and most platforms give the port in PORT; HOST=127.0.0.1 keeps a local run off the network.
bind = f"{os.environ.get('HOST', '0.0.0.0')}:{os.environ.get('PORT', '8000')}"

# Processes times threads is how many requests are served at once. Requests spend most of their time
# waiting for PostgreSQL, so threads are cheap concurrency; a second process keeps serving while one is
# busy in Python. Evaluations do not run here: they run in the Celery workers.
workers = int(os.environ.get("GUNICORN_WORKERS", "2"))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))

# A deployment request may carry a 50 MB plan and a dry run may take POLICY_EVALUATION_TIMEOUT_SECONDS:
# a request still running after this is taken to be stuck and its worker is restarted.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = 30
keepalive = 5

# Access and error logs to standard output, where honcho, compose and systemd collect them
# (GUNICORN_ACCESS_LOG empty: no access log).
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-") or None
errorlog = "-"

# X-Forwarded-* headers are believed only from these proxy addresses.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")


def post_worker_init(worker) -> None:
    """Keep Python's cyclic garbage collector off the requests' critical path.

    A page of 100 deployments allocates some 1,300 model instances; with the default thresholds the
    collector ran a full collection every few requests and each took 100-160 ms, which was most of the
    queues' p95 (bench/bench_scale.py). What the process loaded at start is frozen out of every future
    collection, and the young generation is collected after 50,000 allocations instead of 700.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
