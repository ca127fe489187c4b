"""``GET /metrics``: CronRadar's own metrics in the Prometheus text format.

Placeholder of the foundation commit: the metrics come next.
"""


def metrics(environ: dict, start_response) -> list[bytes]:
    """``GET /metrics`` (WSGI)."""
    start_response("404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", "0")])
    return [b""]
