"""Notification delivery: the :class:`~alerts.models.Delivery` row is the schedule.

Every delivery has an indexed ``next_attempt_at``. One engine sends them, whoever
runs it (the ``serve`` loop, a Celery worker on beat's tick, a test):

1. :func:`claim_due` claims due rows with compare-and-set on their ``lease``, in
   ``next_attempt_at`` order, under a per-channel cap of claims in flight
   (``CRONRADAR_CHANNEL_CONCURRENCY``), and never a row while an earlier delivery
   of the same incident to the same channel is still pending or being sent, so a
   resolve never overtakes its trigger. A claim moves ``next_attempt_at`` to when
   it expires (``claim_timeout()``): if the sender dies (a killed worker, a
   restart, a flushed broker) the row is due again seconds later.
2. :func:`send` makes one HTTP attempt of a claimed row, logs it as a
   :class:`~alerts.models.DeliveryAttempt`, and writes the outcome only if it still
   holds the claim:

   - 2xx: ``delivered``.
   - a network error, a timeout, a DNS failure, 429 or 5xx: ``pending`` again, due
     after ``Retry-After`` (capped at ``CRONRADAR_DELIVERY_RETRY_AFTER_CAP``) or an
     exponential backoff with jitter; once the delivery is older than
     ``CRONRADAR_DELIVERY_MAX_AGE`` (or has made ``CRONRADAR_DELIVERY_MAX_ATTEMPTS``
     attempts, when that is set) it is ``failed``: given up, and visible.
   - any other answer (3xx, 4xx), a request that cannot be built or a destination
     the SSRF guard refuses (:mod:`alerts.destinations`): ``failed`` at once.

Receivers get each notification at least once: a sender that dies after the
request went out and before its outcome was written leaves the row claimed; it is
sent again when the claim expires. Dedupe on ``event_id`` (webhooks) or rely on
PagerDuty's ``dedup_key``.

Each outcome also updates the channel's health (``last_error``, ``failing_since``).
"""
from __future__ import annotations

import email.utils
import functools
import logging
import random
import smtplib
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
from django.conf import settings
from django.core import mail
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from alerts import escalation
from alerts.destinations import BlockedDestination, GuardedTransport
from alerts.integrations import KINDS, OutgoingEmail, OutgoingRequest
from alerts.models import Channel, Delivery, DeliveryAttempt

logger = logging.getLogger(__name__)

BACKOFF_CAP = 600.0  # seconds between two attempts at most (without Retry-After)
ERROR_MAX = 500  # DeliveryAttempt.error / Delivery.last_error length
BODY_SNIPPET = 200  # bytes of a failed response's body kept in the error
_CLAIM_LOCK = 7_311_001  # pg_advisory_xact_lock key: one claimer at a time


@dataclass(frozen=True)
class Claim:
    """A claimed delivery: its id and the ``lease`` that proves the claim."""

    delivery_id: int
    lease: int


def claim_timeout() -> timedelta:
    """How long a claim holds: twice the HTTP timeout plus 2 s (12 s by default).

    An attempt normally ends well within it; one that takes longer (a receiver
    that trickles its answer) may see its row claimed and sent again, which the
    at-least-once contract allows, and its own outcome is then discarded."""
    return timedelta(seconds=2 * settings.CRONRADAR_DELIVERY_TIMEOUT + 2)


def claim_due(now: datetime, limit: int) -> list[Claim]:
    """Claim up to ``limit`` deliveries due at ``now``; returns their claims.

    Due: ``pending`` or ``sending`` (an expired claim) with ``next_attempt_at <=
    now``, and no earlier delivery of the same incident to the same channel still
    pending or sending. A channel gets no more claims while it has
    ``CRONRADAR_CHANNEL_CONCURRENCY`` unexpired ones. Claimers are serialized (an
    advisory lock on PostgreSQL, the write lock on SQLite), so the cap holds with
    any number of processes; each claim is a compare-and-set on ``lease`` too.
    """
    if limit <= 0:
        return []
    cap = settings.CRONRADAR_CHANNEL_CONCURRENCY
    earlier = Delivery.objects.filter(incident=OuterRef("incident"), channel=OuterRef("channel"),
                                      pk__lt=OuterRef("pk"), status__in=Delivery.ACTIVE)
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CLAIM_LOCK])
        # Hits the delivery_due index; the NOT EXISTS hits delivery_order.
        due = list(Delivery.objects.filter(status__in=Delivery.ACTIVE, next_attempt_at__lte=now)
                   .exclude(Exists(earlier)).order_by("next_attempt_at", "pk")
                   .values_list("pk", "channel_id", "lease")[:limit * 4])
        if not due:
            return []
        in_flight = Counter(Delivery.objects.filter(
            status=Delivery.Status.SENDING, next_attempt_at__gt=now,
            channel_id__in={ch for _, ch, _ in due}).values_list("channel_id", flat=True))
        claims: list[Claim] = []
        for pk, channel_id, lease in due:
            if len(claims) >= limit:
                break
            if in_flight[channel_id] >= cap:
                continue
            if Delivery.objects.filter(pk=pk, lease=lease).update(
                    status=Delivery.Status.SENDING, lease=lease + 1, claimed_at=now,
                    next_attempt_at=now + claim_timeout()):
                in_flight[channel_id] += 1
                claims.append(Claim(pk, lease + 1))
        return claims


def send(claim: Claim, *, client: httpx.Client | None = None, clock=timezone.now) -> str:
    """Make the attempt ``claim`` was claimed for; returns the delivery's status after
    it ("" when the claim was lost: the row was re-claimed or deleted meanwhile).

    client: the httpx client (tests pass one with a mock transport; default: one
    shared, connection-pooling client); clock: the current time, read before and
    after the request (tests pass a controlled one). Never raises for a failed
    send: errors end up in the attempt log, the row and the channel.
    """
    delivery = (Delivery.objects.select_related("channel").filter(
        pk=claim.delivery_id, lease=claim.lease, status=Delivery.Status.SENDING).first())
    if delivery is None:
        return ""
    started_at, started = clock(), time.monotonic()
    status_code, error, retryable, retry_after = _send(delivery, client)
    duration_ms = round((time.monotonic() - started) * 1000)
    now = clock()
    number = delivery.attempts + 1
    fields = {"attempts": number, "last_error": error[:ERROR_MAX]}
    if status_code is not None and 200 <= status_code < 300:
        fields.update(status=Delivery.Status.DELIVERED, delivered_at=now, next_attempt_at=None)
    elif retryable and not _exhausted(delivery, number, now):
        fields.update(status=Delivery.Status.PENDING,
                      next_attempt_at=now + timedelta(seconds=retry_delay(number, retry_after)))
    else:
        if retryable:
            fields["last_error"] = (f"gave up after {number} attempt{'s' * (number > 1)} over "
                                    f"{_age(delivery, now)}: {error}")[:ERROR_MAX]
        fields.update(status=Delivery.Status.FAILED, next_attempt_at=None)
    with transaction.atomic():
        if not Delivery.objects.filter(pk=delivery.pk).exists():
            logger.info("delivery %s was deleted while being sent", delivery.pk)
            return ""
        DeliveryAttempt.objects.create(delivery=delivery, number=number, at=started_at,
                                       status_code=status_code, error=error[:ERROR_MAX],
                                       duration_ms=duration_ms)
        if not Delivery.objects.filter(pk=delivery.pk, lease=claim.lease,
                                       status=Delivery.Status.SENDING).update(**fields):
            logger.warning("delivery %s: claim expired while sending; it will be sent again",
                           delivery.pk)
            return ""
        _record_health(delivery.channel, fields["status"], error, now)
        if fields["status"] == Delivery.Status.FAILED:
            escalation.on_delivery_failed(delivery, now)
    log = logger.warning if fields["status"] == Delivery.Status.FAILED else logger.info
    log("delivery %s attempt %s to channel %s: %s %s", delivery.pk, number,
        delivery.channel_id, fields["status"], error or status_code)
    return fields["status"]


def retry_delay(attempts: int, retry_after: float | None = None) -> float:
    """Seconds before the next attempt after ``attempts`` (>= 1) failed ones.

    The receiver's ``Retry-After`` when it sent one, capped at
    ``CRONRADAR_DELIVERY_RETRY_AFTER_CAP``; otherwise ``CRONRADAR_DELIVERY_BACKOFF
    ** attempts`` capped at 600 s, with jitter: a random value between half of it
    and all of it, so receivers that come back are not hit by every sender at once.
    """
    if retry_after is not None:
        return max(0.0, min(retry_after, settings.CRONRADAR_DELIVERY_RETRY_AFTER_CAP))
    base = min(settings.CRONRADAR_DELIVERY_BACKOFF ** attempts, BACKOFF_CAP)
    return random.uniform(base / 2, base)


def _exhausted(delivery: Delivery, attempts: int, now: datetime) -> bool:
    """True once retrying stops: older than the max age, or out of attempts."""
    limit = settings.CRONRADAR_DELIVERY_MAX_ATTEMPTS
    too_old = now - delivery.created_at >= timedelta(seconds=settings.CRONRADAR_DELIVERY_MAX_AGE)
    return too_old or bool(limit and attempts >= limit)


def _age(delivery: Delivery, now: datetime) -> str:
    seconds = int((now - delivery.created_at).total_seconds())
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds}s"


def _record_health(channel: Channel, status: str, error: str, now: datetime) -> None:
    """The channel's ``last_error`` and ``failing_since`` after one outcome."""
    if status == Delivery.Status.DELIVERED:
        Channel.objects.filter(pk=channel.pk).exclude(failing_since=None).update(
            failing_since=None)
    else:
        Channel.objects.filter(pk=channel.pk).update(last_error=error[:ERROR_MAX])
        Channel.objects.filter(pk=channel.pk, failing_since=None).update(failing_since=now)


def _send(delivery: Delivery, client: httpx.Client | None
          ) -> tuple[int | None, str, bool, float | None]:
    """Build and POST ``delivery``'s request: (status_code, error, retryable, retry_after)."""
    channel = delivery.channel
    try:
        kind = KINDS[channel.kind]
        if delivery.outage_id is not None:
            request = kind.build_outage(channel, delivery.outage)
        else:
            request = kind.build_request(channel, delivery.event)
    except Exception as exc:  # any builder failure is a config/data problem: no retry
        logger.exception("delivery %s: cannot build the request", delivery.pk)
        return None, f"build error: {type(exc).__name__}: {exc}", False, None
    return transmit(request, client)


def transmit(request, client: httpx.Client | None = None
             ) -> tuple[int | None, str, bool, float | None]:
    """Send one built request: an HTTP POST, or an email through Django's mail
    backend (its "status code" 250, SMTP's OK, on success). Returns (status_code,
    error, retryable, retry_after); never raises for a failed send."""
    if isinstance(request, OutgoingEmail):
        return _mail(request)
    return _post(client or _shared_client(), request)


def _mail(message: OutgoingEmail) -> tuple[int | None, str, bool, float | None]:
    """Send ``message``: SMTP 5xx and refused recipients fail for good; connection
    trouble and 4xx are retried."""
    try:
        connection = mail.get_connection(timeout=settings.CRONRADAR_DELIVERY_TIMEOUT)
        email = mail.EmailMultiAlternatives(message.subject, message.text,
                                            settings.CRONRADAR_EMAIL_FROM, list(message.to),
                                            connection=connection)
        email.attach_alternative(message.html, "text/html")
        email.send()
    except smtplib.SMTPRecipientsRefused as exc:
        return None, f"recipients refused: {exc.recipients}", False, None
    except smtplib.SMTPResponseException as exc:
        return exc.smtp_code, f"SMTP {exc.smtp_code}: {exc.smtp_error!r}", exc.smtp_code < 500, None
    except (OSError, smtplib.SMTPException) as exc:
        return None, f"mail error: {type(exc).__name__}: {exc}", True, None
    return 250, "", False, None


@functools.cache
def _shared_client() -> httpx.Client:
    """One connection-pooling client per process (httpx clients are thread-safe).

    A new client per attempt costs ~30 ms of CPU (TLS context), which slowed the
    evaluator down when many alerts went out at once (bench/README.md).
    """
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=20)
    return httpx.Client(transport=GuardedTransport(httpx.HTTPTransport(limits=limits)))


def _post(client: httpx.Client, request: OutgoingRequest
          ) -> tuple[int | None, str, bool, float | None]:
    """POST ``request``; reads at most ``BODY_SNIPPET`` bytes of the response."""
    timeout = settings.CRONRADAR_DELIVERY_TIMEOUT
    try:
        with client.stream("POST", request.url, content=request.body, headers=request.headers,
                           timeout=timeout, follow_redirects=False) as response:
            code = response.status_code
            if 200 <= code < 300:
                return code, "", False, None
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
            snippet = b""
            for chunk in response.iter_bytes():
                snippet += chunk
                if len(snippet) >= BODY_SNIPPET:
                    break
    except BlockedDestination as exc:
        return None, f"blocked: {exc}", False, None
    except OSError as exc:  # the name did not resolve (checked by the SSRF guard)
        return None, f"dns error: {exc}", True, None
    except httpx.TimeoutException as exc:
        return None, f"timeout after {timeout:g}s: {type(exc).__name__}", True, None
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        return None, f"invalid URL: {exc}", False, None
    except httpx.HTTPError as exc:
        return None, f"network error: {type(exc).__name__}: {exc}", True, None
    text = snippet[:BODY_SNIPPET].decode("utf-8", "replace").strip()
    error = f"HTTP {code}: {text}" if text else f"HTTP {code}"
    return code, error, code == 429 or code >= 500, retry_after


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header (RFC 9110 §10.2.3: delay-seconds or an
    HTTP-date), or None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - (now or timezone.now())).total_seconds())
