"""``GET /readyz``: whether this CronRadar can do its work (docs/operations.md).

Placeholder of the foundation commit: the readiness parts come next.
"""
import json


def readyz(environ: dict, start_response) -> list[bytes]:
    """``GET /readyz`` (WSGI)."""
    body = json.dumps({}).encode()
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(body)))])
    return [body]
