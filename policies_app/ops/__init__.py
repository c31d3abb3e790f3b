"""What operators watch: Prometheus metrics (metrics.py, scraped through metrics_view.py), readiness
(readiness.py) and structured logs with a request id carried into tasks (request_ids.py)."""
