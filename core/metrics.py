"""CronRadar's process metrics: the prometheus_client objects the ping path, the
evaluator and the delivery engine update (docs/operations.md, "Metrics").

Multi-process mode: when ``PROMETHEUS_MULTIPROC_DIR`` (prometheus_client's own
variable) is set before prometheus_client is first imported, every process
writes its values to files in that directory and one scrape
(:func:`cronradar.selfmetrics.exposition`) adds them up across the web server's
and the Celery workers' processes of the host. Without it they live in this
process's default registry (the embedded ``manage.py serve`` is one process).
The directory must be empty when the processes start (the library's rule):
the deployment clears it (docs/operations.md).

Series (names are contracts; label values are coded):

- ``cronradar_pings_total{kind}`` (counter): stored pings by kind, ``start``,
  ``success``, ``fail``, ``log``;
- ``cronradar_ping_duration_seconds`` (histogram): a ping request, from the
  route seeing it to its answer;
- ``cronradar_evaluator_tick_duration_seconds`` (histogram): one evaluator tick;
- ``cronradar_incidents_opened_total{cause}`` (counter): incidents opened, by the
  detection that opened them (``missed``, ``failed``, ...);
- ``cronradar_delivery_duration_seconds{kind}`` (histogram): one delivery
  attempt's request, by channel kind;
- ``cronradar_delivery_attempts_total{kind,result}`` (counter): attempts by
  channel kind and result, ``delivered``, ``retry`` (tried again later) or
  ``failed`` (given up);
- ``cronradar_deliveries_finished_total{status}`` (counter): deliveries that
  reached ``delivered`` or ``failed``.
"""
from __future__ import annotations

from prometheus_client import Counter, Histogram

PING_KINDS = ("start", "success", "fail", "log")

PINGS = Counter("cronradar_pings_total", "Pings stored, by kind", ["kind"])
# a labelled child per kind, made once: the ping path does no label lookup
PINGS_BY_KIND = {kind: PINGS.labels(kind=kind) for kind in PING_KINDS}
# a ping is answered in about a millisecond; a slow database shows in the upper buckets
PING_DURATION = Histogram(
    "cronradar_ping_duration_seconds", "Time to answer a ping request",
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5))

# a tick stops taking batches after evaluator.TICK_BUDGET (5 s)
TICK_DURATION = Histogram(
    "cronradar_evaluator_tick_duration_seconds", "Time one evaluator tick took",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0))

INCIDENTS_OPENED = Counter("cronradar_incidents_opened_total",
                           "Incidents opened, by the cause that opened them", ["cause"])

# an attempt is bounded by the HTTP timeout (CRONRADAR_DELIVERY_TIMEOUT, 5 s by default)
DELIVERY_DURATION = Histogram(
    "cronradar_delivery_duration_seconds", "Time one delivery attempt took, by channel kind",
    ["kind"], buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0))
DELIVERY_ATTEMPTS = Counter(
    "cronradar_delivery_attempts_total",
    "Delivery attempts, by channel kind and result (delivered, retry, failed)",
    ["kind", "result"])
DELIVERIES_FINISHED = Counter(
    "cronradar_deliveries_finished_total",
    "Deliveries that reached a final status (delivered, failed)", ["status"])
for _status in ("delivered", "failed"):
    DELIVERIES_FINISHED.labels(status=_status)  # both series exist from the start


def ping_stored(kind: str) -> None:
    """Count one stored ping of ``kind`` (one of :data:`PING_KINDS`; KeyError
    otherwise)."""
    PINGS_BY_KIND[kind].inc()


def incident_opened(cause: str, n: int = 1) -> None:
    """Count ``n`` incidents opened for ``cause`` (a detection kind)."""
    INCIDENTS_OPENED.labels(cause=cause).inc(n)


def delivery_attempted(kind: str, result: str, seconds: float) -> None:
    """Record one delivery attempt to a channel of ``kind`` that took
    ``seconds``; ``result``: ``delivered``, ``retry`` or ``failed``. A
    ``delivered`` or ``failed`` result also counts a finished delivery."""
    DELIVERY_DURATION.labels(kind=kind).observe(seconds)
    DELIVERY_ATTEMPTS.labels(kind=kind, result=result).inc()
    if result != "retry":
        DELIVERIES_FINISHED.labels(status=result).inc()
