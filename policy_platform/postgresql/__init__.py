"""The PostgreSQL backend of production: Django's, with a connection health check that costs no round trip
(base.py)."""
