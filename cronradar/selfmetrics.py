"""``GET /metrics``: CronRadar's own metrics in the Prometheus text format
(docs/operations.md, "Metrics"), answered by :class:`cronradar.probes.Probes`
ahead of host validation and the HTTPS redirect.

One scrape (:func:`exposition`) is:

- the process metrics of :mod:`core.metrics`: with ``PROMETHEUS_MULTIPROC_DIR``
  set, those of every process of the host that writes to that directory (the web
  server's workers, the Celery workers), added up by prometheus_client's
  :class:`~prometheus_client.multiprocess.MultiProcessCollector`; without it, this
  process's default registry (with its ``process_*`` and ``python_*`` series);
- the readings of the database (:class:`DatabaseCollector`), true whichever
  process is scraped;
- readiness (:class:`cronradar.health.ReadinessCollector`: ``cronradar_ready{part}``).

Access (:func:`refusal`): ``Authorization: Bearer <CRONRADAR_METRICS_TOKEN>``, or a
client address in ``CRONRADAR_METRICS_ALLOWED``. The address is the ping path's
(:func:`core.edge.client_address`); a request that came through a proxy not
declared trusted (an ``X-Forwarded-For``, ``Forwarded`` or ``X-Real-IP`` header
while ``CRONRADAR_TRUST_X_FORWARDED_FOR`` is off) is allowed by token only: the
proxy's own address (often loopback) says nothing about the client's.
"""
from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import time
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connection
from django.utils import timezone
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.multiprocess import MultiProcessCollector

import core.metrics  # noqa: F401  (the process metrics exist, at 0, from the first scrape)
from alerts import backlog
from core.edge import client_address
from cronradar import guard, health
from monitors import evaluator, liveness

log = logging.getLogger(__name__)

OUTAGE_LOG_EVERY = 60.0  # seconds between two log lines about an unreachable database
_last_outage_log: list[float] = []


def _read_database() -> dict:
    """The database readings of one scrape (five indexed reads). Raises
    DatabaseError."""
    now = timezone.now()
    due = evaluator.oldest_due(now)
    oldest = backlog.oldest_claimable(now)
    return {"lag": max(0.0, (now - due).total_seconds()) if due else 0.0,
            "last_tick": liveness.last_beat(liveness.EVALUATOR),
            "active": backlog.active_counts(),
            "delivery_lag": max(0.0, (now - oldest).total_seconds()) if oldest else 0.0,
            "failing": backlog.channels_failing()}


def _read_retried() -> dict:
    """:func:`_read_database`, once more on a new connection when it fails (a
    connection cut while idle). Raises DatabaseError; the connection it leaves
    is closed then (the next scrape opens a new one)."""
    try:
        try:
            return _read_database()
        except DatabaseError:
            connection.close()
            return _read_database()
    except DatabaseError:
        connection.close()
        raise


def _outage(why: Exception | str) -> None:
    now = time.monotonic()
    if not _last_outage_log or now - _last_outage_log[0] >= OUTAGE_LOG_EVERY:
        _last_outage_log[:] = [now]
        log.warning("/metrics: database unavailable, its series left out: %s", why)


class DatabaseCollector:
    """The series read from the database at each scrape:

    - ``cronradar_metrics_database_up`` (gauge): 1 when the readings below could
      be made, 0 when the database could not be read or did not answer within
      ``CRONRADAR_READY_TIMEOUT`` seconds (:mod:`cronradar.guard`; they are left
      out then; the scrape still answers 200);
    - ``cronradar_evaluator_lag_seconds`` (gauge): now minus the earliest
      ``next_evaluation_at`` that is due, 0 when none is;
    - ``cronradar_evaluator_last_tick_timestamp_seconds`` (gauge, Unix time): the
      evaluator's last recorded beat (within ``CRONRADAR_LIVENESS_INTERVAL`` of
      its last tick); absent before the first;
    - ``cronradar_deliveries{status}`` (gauge): active deliveries, ``pending``
      and ``sending``;
    - ``cronradar_delivery_lag_seconds`` (gauge): the age of the oldest delivery
      that could be claimed now, 0 when none (:mod:`alerts.backlog`);
    - ``cronradar_channels_failing`` (gauge): channels failing now.
    """

    def collect(self):
        try:
            answered, read = guard.within(_read_retried)
        except DatabaseError as exc:
            _outage(exc)
            answered = False
        else:
            if not answered:
                _outage(f"no answer within {settings.CRONRADAR_READY_TIMEOUT:g} s")
        if not answered:
            yield GaugeMetricFamily("cronradar_metrics_database_up",
                                    "1 when /metrics could read the database", value=0)
            return
        yield GaugeMetricFamily("cronradar_metrics_database_up",
                                "1 when /metrics could read the database", value=1)
        yield GaugeMetricFamily("cronradar_evaluator_lag_seconds",
                                "How far behind the oldest due monitor is", value=read["lag"])
        if read["last_tick"] is not None:
            yield GaugeMetricFamily("cronradar_evaluator_last_tick_timestamp_seconds",
                                    "Unix time of the evaluator's last recorded tick",
                                    value=read["last_tick"].timestamp())
        deliveries = GaugeMetricFamily("cronradar_deliveries",
                                       "Active deliveries by status (pending, sending)",
                                       labels=["status"])
        for status, n in sorted(read["active"].items()):
            deliveries.add_metric([status], n)
        yield deliveries
        yield GaugeMetricFamily("cronradar_delivery_lag_seconds",
                                "Age of the oldest delivery that could be claimed now",
                                value=read["delivery_lag"])
        yield GaugeMetricFamily("cronradar_channels_failing", "Channels failing now",
                                value=read["failing"])


def process_registry() -> CollectorRegistry:
    """A registry of the process metrics: the multi-process directory's when
    ``PROMETHEUS_MULTIPROC_DIR`` is set, else this process's default registry.
    (The Celery workers' metrics port serves this.)"""
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)
    else:
        registry.register(REGISTRY)  # a registry is a collector (it has collect())
    return registry


def scrape_registry() -> CollectorRegistry:
    """The registry of one scrape: :func:`process_registry`, the database's series
    and readiness'."""
    registry = process_registry()
    registry.register(DatabaseCollector())
    registry.register(health.ReadinessCollector())
    return registry


def exposition() -> bytes:
    """The whole ``/metrics`` text of this process (host), in the Prometheus text
    format 0.0.4: see the module docstring. Never raises for a database outage."""
    return generate_latest(scrape_registry())


@lru_cache(maxsize=8)
def networks(allowed: tuple[str, ...]) -> tuple:
    """``CRONRADAR_METRICS_ALLOWED`` entries (addresses or CIDR networks) parsed;
    raises ImproperlyConfigured naming a bad one."""
    parsed = []
    for entry in allowed:
        try:
            parsed.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"CRONRADAR_METRICS_ALLOWED: {entry!r} is not an IP address or network "
                "(e.g. 127.0.0.0/8, ::1, 10.0.0.0/8)") from None
    return tuple(parsed)


PROXY_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")


def _address_allowed(environ: dict) -> bool:
    if not settings.CRONRADAR_TRUST_X_FORWARDED_FOR and any(h in environ for h in PROXY_HEADERS):
        return False  # proxied, by a proxy not trusted: REMOTE_ADDR is the proxy's
    forwarded = environ.get("HTTP_X_FORWARDED_FOR")
    if forwarded is not None and _not_an_address(forwarded.rsplit(",", 1)[-1]):
        return False  # the proxy's entry is unreadable: never fall back to the proxy's address
    address = client_address(environ)
    if address is None:
        return False
    ip = ipaddress.ip_address(address)
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in net for net in networks(tuple(settings.CRONRADAR_METRICS_ALLOWED)))


def _not_an_address(value: str) -> bool:
    try:
        ipaddress.ip_address(value.strip())
    except ValueError:
        return True
    return False


def _token_matches(given: str) -> bool:
    token = settings.CRONRADAR_METRICS_TOKEN
    return bool(token) and hmac.compare_digest(given.encode("utf-8", "surrogateescape"),
                                               token.encode("utf-8", "surrogateescape"))


def refusal(environ: dict) -> tuple[str, list, str] | None:
    """None when the request may read ``/metrics``; else (status line, extra
    headers, message): ``401`` (with ``WWW-Authenticate``) for a bearer token that
    is not ``CRONRADAR_METRICS_TOKEN``, from any address (a scraper whose token is
    wrong should hear so, not be let in by its address), ``403`` for no token
    from an address not allowed."""
    scheme, _, given = environ.get("HTTP_AUTHORIZATION", "").strip().partition(" ")
    bearer = scheme.lower() == "bearer" and given.strip() != ""
    if bearer:
        if _token_matches(given.strip()):
            return None
        return ("401 Unauthorized", [("WWW-Authenticate", 'Bearer realm="metrics"')],
                "wrong metrics token: send Authorization: Bearer <CRONRADAR_METRICS_TOKEN>")
    if _address_allowed(environ):
        return None
    return ("403 Forbidden", [],
            "forbidden: /metrics is readable with Authorization: Bearer "
            "<CRONRADAR_METRICS_TOKEN> or from an address in CRONRADAR_METRICS_ALLOWED "
            "(a request through a proxy counts as one only with "
            "CRONRADAR_TRUST_X_FORWARDED_FOR on)")


def _answer(start_response, status: str, headers: list, body: bytes, head: bool) -> list[bytes]:
    start_response(status, [*headers, ("Content-Length", str(len(body))),
                            ("Cache-Control", "no-store")])
    return [b"" if head else body]


def metrics(environ: dict, start_response) -> list[bytes]:
    """``GET``/``HEAD /metrics`` (WSGI): :func:`exposition` to a caller
    :func:`refusal` lets in; ``405`` for other methods. Plain-text messages."""
    method = environ.get("REQUEST_METHOD", "GET")
    text = [("Content-Type", "text/plain; charset=utf-8")]
    if method not in ("GET", "HEAD"):
        return _answer(start_response, "405 Method Not Allowed",
                       [*text, ("Allow", "GET, HEAD")],
                       b"method not allowed: use GET or HEAD\n", False)
    head = method == "HEAD"
    if (refused := refusal(environ)) is not None:
        status, headers, message = refused
        return _answer(start_response, status, [*text, *headers], (message + "\n").encode(),
                       head)
    # the format the scraper's Accept asks for, as prometheus_client's own server
    # chooses it (the text format 0.0.4 without one; OpenMetrics for Prometheus)
    encoder, content_type = choose_encoder(environ.get("HTTP_ACCEPT", ""))
    return _answer(start_response, "200 OK", [("Content-Type", content_type)],
                   encoder(scrape_registry()), head)


networks(tuple(settings.CRONRADAR_METRICS_ALLOWED))  # a bad entry stops the server at start
