"""The ground floor: plumbing every app imports and that imports no app.

The SQL layer (:mod:`core.sql`), the API helpers (:mod:`core.api`), the edge
middleware and its NUL check (:mod:`core.edge`), the production checks
(:mod:`core.checks`) and the SSRF guard (:mod:`core.destinations`).
"""
