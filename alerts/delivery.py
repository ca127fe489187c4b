"""Send one notification delivery: claim, build, guard, POST, log, update.

:func:`attempt` makes one HTTP attempt of a :class:`~alerts.models.Delivery` and
records it as a :class:`~alerts.models.DeliveryAttempt`. Scheduling the next
attempt is the caller's job (``alerts.tasks.deliver``), using :func:`backoff`.

Outcomes of one attempt:

- 2xx: ``delivered``.
- network error, timeout, DNS failure, 429, 5xx: retryable; ``pending`` again
  until ``CRONRADAR_DELIVERY_MAX_ATTEMPTS`` attempts were made, then ``failed``.
- any other status (3xx, 4xx), an unbuildable request (bad channel config, an
  event kind that does not notify) or a blocked destination: ``failed`` at once.
"""
from __future__ import annotations

import functools
import ipaddress
import logging
import socket
import time
from dataclasses import dataclass
from datetime import datetime

import httpx
from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from alerts.integrations import KINDS, OutgoingRequest
from alerts.models import Delivery, DeliveryAttempt

logger = logging.getLogger(__name__)

BACKOFF_CAP = 300.0  # seconds
ERROR_MAX = 500  # DeliveryAttempt.error / Delivery.last_error length
BODY_SNIPPET = 200  # bytes of a failed response's body kept in the error


class BlockedDestination(Exception):
    """The destination resolves to an address notifications may not reach."""


@dataclass(frozen=True)
class AttemptResult:
    """What one :func:`attempt` call did.

    claimed: False when the delivery was not ``pending`` (another worker holds it,
        or it is finished); then nothing was sent or written and ``status`` is "".
    status: the delivery's ``Delivery.Status`` value afterwards.
    attempts: the delivery's attempt count afterwards.
    """

    claimed: bool
    status: str
    attempts: int

    @property
    def retry(self) -> bool:
        """True when the delivery should be attempted again after :func:`backoff`."""
        return self.status == Delivery.Status.PENDING


def attempt(delivery: Delivery, *, client: httpx.Client | None = None,
            now: datetime | None = None) -> AttemptResult:
    """Make one HTTP attempt of ``delivery`` and record it.

    The delivery is first claimed with a compare-and-set (``pending`` ->
    ``sending``), so two workers never send it twice; an unclaimable delivery is
    returned untouched with ``claimed=False``. Otherwise one ``DeliveryAttempt``
    (number, at, status_code, error, duration_ms) is written and ``delivery``
    (the object passed in, and its row) gets its new ``status``, ``attempts``,
    ``last_error`` and, on success, ``delivered_at``.

    client: the httpx client to send with (tests pass one with a mock transport);
        default: one shared, connection-pooling client. The timeout is always
        ``CRONRADAR_DELIVERY_TIMEOUT`` seconds.
    now: the attempt's ``at`` and ``delivered_at`` (aware); default: the current time.
    Never raises for a failed send; errors end up in the log row.
    """
    at = now or timezone.now()
    claimed = Delivery.objects.filter(
        pk=delivery.pk, status=Delivery.Status.PENDING
    ).update(status=Delivery.Status.SENDING, claimed_at=at)
    if not claimed:
        return AttemptResult(claimed=False, status="", attempts=delivery.attempts)
    delivery.refresh_from_db()
    number = delivery.attempts + 1
    started = time.monotonic()
    status_code, error, retryable = _send(delivery, client)
    duration_ms = round((time.monotonic() - started) * 1000)

    if status_code is not None and 200 <= status_code < 300:
        status = Delivery.Status.DELIVERED
        delivery.delivered_at = at
    elif retryable and number < settings.CRONRADAR_DELIVERY_MAX_ATTEMPTS:
        status = Delivery.Status.PENDING
    else:
        status = Delivery.Status.FAILED
    error = error[:ERROR_MAX]
    try:
        with transaction.atomic():
            DeliveryAttempt.objects.create(delivery=delivery, number=number, at=at,
                                           status_code=status_code, error=error,
                                           duration_ms=duration_ms)
            delivery.status = status
            delivery.attempts = number
            delivery.last_error = error
            delivery.save(update_fields=["status", "attempts", "last_error", "delivered_at"])
    except DatabaseError:
        if Delivery.objects.filter(pk=delivery.pk).exists():
            raise
        # Its monitor (and so the delivery) was deleted while the request was out.
        logger.info("delivery %s was deleted while being sent", delivery.pk)
        return AttemptResult(claimed=True, status=Delivery.Status.FAILED, attempts=number)
    log = logger.info if status != Delivery.Status.FAILED else logger.warning
    log("delivery %s attempt %s to channel %s: %s %s", delivery.pk, number,
        delivery.channel_id, status, error or status_code)
    return AttemptResult(claimed=True, status=status, attempts=number)


def backoff(attempts: int) -> float:
    """Seconds to wait after ``attempts`` (>= 1) failed attempts before the next one.

    ``CRONRADAR_DELIVERY_BACKOFF ** attempts``, capped at 300: with the default
    base 2.0 that is 2, 4, 8, 16, ... seconds.
    """
    return min(settings.CRONRADAR_DELIVERY_BACKOFF ** attempts, BACKOFF_CAP)


def check_destination(url: str) -> None:
    """Refuse ``url`` unless every address its host resolves to is public.

    Resolves the host with ``socket.getaddrinfo`` and checks each address with
    ``ipaddress`` (IPv4-mapped IPv6 addresses are checked as IPv4): loopback,
    private, link-local, shared (CGNAT), reserved, unspecified and multicast
    addresses raise :class:`BlockedDestination`. A host that does not resolve
    raises ``OSError`` (``socket.gaierror``); a malformed URL ``httpx.InvalidURL``.
    """
    parsed = httpx.URL(url)
    if not parsed.host:
        raise BlockedDestination("URL has no host")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    for *_, sockaddr in socket.getaddrinfo(parsed.host, port, type=socket.SOCK_STREAM):
        address = ipaddress.ip_address(sockaddr[0])
        if address.version == 6 and address.ipv4_mapped:
            address = address.ipv4_mapped
        if not address.is_global or address.is_multicast:
            raise BlockedDestination(f"{parsed.host} resolves to non-public address {address}")


def _send(delivery: Delivery, client: httpx.Client | None) -> tuple[int | None, str, bool]:
    """Build and POST ``delivery``'s request: (status_code, error, retryable)."""
    channel = delivery.channel
    try:
        kind = KINDS[channel.kind]
        if delivery.outage_id is not None:
            request = kind.build_outage(channel, delivery.outage)
        else:
            request = kind.build_request(channel, delivery.event)
    except Exception as exc:  # any builder failure is a config/data problem: no retry
        logger.exception("delivery %s: cannot build the request", delivery.pk)
        return None, f"build error: {type(exc).__name__}: {exc}", False
    if settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES:
        try:
            check_destination(request.url)
        except (BlockedDestination, httpx.InvalidURL) as exc:
            return None, f"blocked: {exc}", False
        except OSError as exc:
            return None, f"dns error: {exc}", True
    return _post(client or _shared_client(), request)


@functools.cache
def _shared_client() -> httpx.Client:
    """One connection-pooling client per process (httpx clients are thread-safe).

    A new client per attempt costs ~30 ms of CPU (TLS context), which slowed the
    evaluator down when many alerts went out at once (bench/README.md).
    """
    return httpx.Client(limits=httpx.Limits(max_connections=100, max_keepalive_connections=20))


def _post(client: httpx.Client, request: OutgoingRequest) -> tuple[int | None, str, bool]:
    """POST ``request``; reads at most ``BODY_SNIPPET`` bytes of the response."""
    timeout = settings.CRONRADAR_DELIVERY_TIMEOUT
    try:
        with client.stream("POST", request.url, content=request.body, headers=request.headers,
                           timeout=timeout, follow_redirects=False) as response:
            code = response.status_code
            if 200 <= code < 300:
                return code, "", False
            snippet = b""
            for chunk in response.iter_bytes():
                snippet += chunk
                if len(snippet) >= BODY_SNIPPET:
                    break
    except httpx.TimeoutException as exc:
        return None, f"timeout after {timeout:g}s: {type(exc).__name__}", True
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        return None, f"invalid URL: {exc}", False
    except httpx.HTTPError as exc:
        return None, f"network error: {type(exc).__name__}: {exc}", True
    text = snippet[:BODY_SNIPPET].decode("utf-8", "replace").strip()
    error = f"HTTP {code}: {text}" if text else f"HTTP {code}"
    return code, error, code == 429 or code >= 500
