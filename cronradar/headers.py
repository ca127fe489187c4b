"""The Content-Security-Policy on every answer: django-csp's middleware, with the
policy of ``CONTENT_SECURITY_POLICY`` (cronradar/settings.py, docs/multi-tenant.md)."""
from csp.middleware import CSPMiddleware


class NoncedCSPMiddleware(CSPMiddleware):
    """django-csp's middleware, with a nonce in the policy of every HTML answer.

    django-csp names a nonce only when the page asked for ``request.csp_nonce``
    (a ``<script nonce>``); the admin's pages, Swagger UI's and the signed
    acknowledge page do not. A fresh one on each HTML page anyway gives every page
    the one policy, ``script-src 'self' 'nonce-...'`` (what
    tests/site/dashboard/test_headers.py checks), rather than two shapes by template."""

    def process_response(self, request, response):
        if response.get("Content-Type", "").startswith("text/html"):
            str(request.csp_nonce)  # evaluates the lazy nonce: the policy names it
        return super().process_response(request, response)
