"""Running PolicyDesk as a service: opening the configured database (migrated), readiness,
the start-up cache warm-up, JSON logs with request and trace ids, and Prometheus metrics.

It imports `storage`, `config`, `detectors` and `screening` (log redaction); the web app, CLI,
pipeline and most services import it.
"""
