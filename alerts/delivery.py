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
     after ``Retry-After`` (or a 429's JSON ``parameters.retry_after``, Telegram's;
     capped at ``CRONRADAR_DELIVERY_RETRY_AFTER_CAP``) or an
     exponential backoff with jitter; once the delivery is older than
     ``CRONRADAR_DELIVERY_MAX_AGE`` (or has made ``CRONRADAR_DELIVERY_MAX_ATTEMPTS``
     attempts, when that is set) it is ``failed``: given up, and visible.
   - any other answer (3xx, 4xx), a request that cannot be built or a destination
     the SSRF guard refuses (:mod:`core.destinations`): ``failed`` at once.

Receivers get each notification at least once: a sender that dies after the
request went out and before its outcome was written leaves the row claimed; it is
due again when the claim expires. Dedupe on ``event_id`` (webhooks) or rely on
PagerDuty's ``dedup_key``.

Each outcome also updates the channel's health (``last_error``, ``failing_since``).
A failing channel's first delivery releases its retries waiting in backoff at
once (:func:`_catch_up`), but those waiting after a 429.
"""
from __future__ import annotations

import email.utils
import functools
import json
import logging
import random
import re
import smtplib
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import quote, quote_plus

import httpx
from django.conf import settings
from django.core import mail
from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone

from accounts.models import Project
from alerts import links
from alerts.integrations import KINDS, OutgoingEmail, OutgoingRequest, common
from alerts.models import Channel, Delivery, DeliveryAttempt, Incident, IncidentEvent
from core import logs, metrics, sql
from core.destinations import BlockedDestination, GuardedTransport
from core.transport import Urllib3Transport
from monitors.models import Monitor

logger = logging.getLogger(__name__)

BACKOFF_CAP = 600.0  # seconds between two attempts at most (without Retry-After)
ERROR_MAX = 500  # DeliveryAttempt.error / Delivery.last_error length
BODY_SNIPPET = 200  # bytes of a failed response's body kept in the error
DRAIN_MAX = 65_536  # bytes of an answer read so that its connection is kept for the next
_CLAIM_LOCK = 7_311_001  # pg_advisory_xact_lock key: one claimer at a time
CLAIM_WINDOW = 1000  # due rows a claim reads at most (see claim_due)

# Sent inside the transaction that records it, for each delivery that failed for
# good: ``delivery`` (the Delivery, its status written) and ``at`` (when its last
# attempt ended). Escalation subscribes (alerts.incidents.on_delivery_failed).
delivery_failed = Signal()
# Sent inside the transaction that records it, for each channel that was failing
# and delivered again: ``channel_id``, ``since`` (when it had started failing) and
# ``at`` (when it delivered). alerts.health announces it (channel.recovered).
channel_recovered = Signal()


@dataclass(frozen=True)
class Claim:
    """A claimed delivery: its id and the ``lease`` that proves the claim."""

    delivery_id: int
    lease: int


def _no_flush_wait() -> None:
    """PostgreSQL: commit this transaction without waiting for the WAL flush (claims
    and outcomes). A crash of PostgreSQL may lose the last fraction of a second of
    them, which only means a delivery is claimed (and sent) again, as the
    at-least-once contract allows; the setting lasts for this transaction only."""
    sql.fetchone("SELECT set_config('synchronous_commit', 'off', true)", [])


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
    any number of processes; the claims are one compare-and-set ``UPDATE`` that
    bumps each row's ``lease``. A claim looks at the first ``CLAIM_WINDOW`` due rows
    of channels below their cap (``next_attempt_at`` order) first; only when those
    leave part of ``limit`` unclaimed while more due rows, or rows that must wait,
    were in it does it read every due row that need not wait (a burst costs a
    bounded read per claim; a backlog waiting behind retries hides nothing).
    """
    if limit <= 0:
        return []
    cap, table = settings.CRONRADAR_CHANNEL_CONCURRENCY, Delivery._meta.db_table
    at = sql.prep(Delivery, "next_attempt_at", now)
    with transaction.atomic():
        if sql.vendor() == "postgresql":
            # one statement: the lock, no wait for the WAL flush (see _no_flush_wait),
            # and no bitmap scans: a burst's rows arrive faster than autoanalyze
            # counts them, and on the stale statistics PostgreSQL read every due row
            # by bitmap and sorted them, where delivery_due gives the first ones in
            # order and stops; and a plan for each claim's values: the statements are
            # prepared (one text each, core.sql), and the candidates' generic plan
            # read every due row (76 ms against 3.3 ms on a backlog of 10,000; the
            # default mode kept custom plans so far, on its cost guess alone)
            # (these settings last for this transaction only)
            sql.fetchone("SELECT pg_advisory_xact_lock(%s), "
                         "set_config('synchronous_commit', 'off', true), "
                         "set_config('enable_bitmapscan', 'off', true), "
                         "set_config('plan_cache_mode', 'force_custom_plan', true)",
                         [_CLAIM_LOCK])
        # Claims in flight per channel (unexpired ``sending`` rows: few).
        in_flight = Counter(dict(sql.fetchall(
            f"SELECT channel_id, COUNT(*) FROM {table} WHERE status = %s "
            "AND next_attempt_at > %s GROUP BY channel_id", [Delivery.Status.SENDING, at])))
        full = [ch for ch, n in in_flight.items() if n >= cap] or [0]
        # Of the first CLAIM_WINDOW due rows of channels not at their cap, the first
        # 2 x cap of each channel, each with whether an earlier active delivery of
        # its incident to its channel must go first: a claim reads a bounded number
        # of rows however many are due (a burst: ten thousand). Only if that left
        # free threads while rows beyond the window, or behind waiting ones, may be
        # claimable, every due row is read, without the waiting ones (a backlog that
        # waits behind a failing channel's retries never hides the others' rows).
        window = min(CLAIM_WINDOW, 8 * limit)
        rows, seen = _candidates(at, full, cap, limit, window)
        picked = _pick(rows, Counter(in_flight), cap, limit)
        if len(picked) < limit and (seen >= window or any(r[2] for r in rows)):
            rows, _ = _candidates(at, full, cap, limit, None)
            picked = _pick(rows, in_flight, cap, limit)
        if not picked:
            return []
        # the picked rows, by primary key: a generic plan, the one plan this
        # statement has whatever the ids (a custom one, on the stale statistics of
        # a burst, read delivery_due through every due row to find them: 1.6 ms a
        # claim on a backlog of 10,000, against 0.6 ms)
        where, ids = sql.where_in(Delivery, "id", picked)
        if sql.vendor() == "postgresql":
            sql.fetchone("SELECT set_config('plan_cache_mode', 'force_generic_plan', true)", [])
        leases = dict(sql.fetchall(
            f"UPDATE {table} SET status = %s, lease = lease + 1, claimed_at = %s, "
            f"next_attempt_at = %s WHERE {where} AND status IN (%s, %s) "
            "AND next_attempt_at <= %s RETURNING id, lease",
            [Delivery.Status.SENDING, sql.prep(Delivery, "claimed_at", now),
             sql.prep(Delivery, "next_attempt_at", now + claim_timeout()), *ids,
             *Delivery.ACTIVE, at]))
    return [Claim(pk, leases[pk]) for pk in picked if pk in leases]


def _candidates(at, full: list[int], cap: int, limit: int, window: int | None
                ) -> tuple[list[tuple[int, int, bool]], int]:
    """For :func:`claim_due`: (id, channel, must wait) of the first 2 x cap due rows
    of each channel not in ``full``, at most 8 x ``limit``, shared round-robin
    across organisations (each organisation's first row, in ``next_attempt_at``
    order, then each one's second, ...); and how many due rows were read.
    ``window``: read the first that many due rows (hits the delivery_due index)
    and the first due row of every channel (a skip scan of delivery_channel_due:
    two index probes a channel with active rows), so a channel, and so an
    organisation, behind another's backlog is seen; whether a row must wait is
    checked for the rows returned, on delivery_order. None: read every due row
    that need not wait.

    On PostgreSQL each statement has one text whatever ``full`` and the sizes
    (arrays and parameters, bound on the server: :mod:`core.sql`), so psycopg
    prepares it and PostgreSQL no longer parses and plans it at every claim."""
    table, pg = Delivery._meta.db_table, sql.vendor() == "postgresql"
    waits = (f"EXISTS (SELECT 1 FROM {table} e WHERE e.incident_id = {{row}}.incident_id "
             f"AND e.channel_id = {{row}}.channel_id AND e.id < {{row}}.id "
             "AND e.status IN (%s, %s))")
    if pg:  # one array: one statement text whatever the number of full channels
        not_full, full = "<> ALL(%s::bigint[])", [full]
    else:
        not_full = f"NOT IN ({', '.join(['%s'] * len(full))})"
    due = (f"SELECT d.id, d.channel_id, d.incident_id, d.next_attempt_at FROM {table} d "
           f"WHERE d.status IN (%s, %s) AND d.next_attempt_at <= %s "
           f"AND d.channel_id {not_full} ")
    params = [*Delivery.ACTIVE, at, *full]
    head, head_params = "", []
    if window:
        # the channels with active rows, one index probe each (WITH RECURSIVE: a
        # loose index scan, on PostgreSQL and SQLite alike); then each one's first
        # due row, read in the index's order (LIMIT 1 stops at it). The index's
        # "next_attempt_at IS NOT NULL" keeps the planner from taking it for the
        # waits probe, which delivery_order serves.
        head = (f"WITH RECURSIVE channels(id) AS (SELECT MIN(channel_id) FROM {table} "
                "WHERE status IN (%s, %s) AND next_attempt_at IS NOT NULL UNION ALL "
                f"SELECT (SELECT MIN(c.channel_id) FROM {table} c WHERE c.status IN (%s, %s) "
                "AND c.next_attempt_at IS NOT NULL AND c.channel_id > channels.id) "
                "FROM channels WHERE channels.id IS NOT NULL) ")
        firsts = (f"SELECT (SELECT f.id FROM {table} f WHERE f.channel_id = channels.id "
                  "AND f.status IN (%s, %s) AND f.next_attempt_at IS NOT NULL "
                  "AND f.next_attempt_at <= %s ORDER BY f.next_attempt_at, f.id LIMIT 1) AS id "
                  "FROM channels "
                  f"WHERE channels.id IS NOT NULL AND channels.id {not_full}")
        # each channel's first row is read by its primary key (firsts already
        # checked that it is due; on PostgreSQL = ANY(ARRAY(...)), one probe each
        # whatever the planner's statistics say): filtering it again, or a join,
        # made PostgreSQL read every due row, a read that grew with the backlog
        ids = f"= ANY(ARRAY({firsts}))" if pg else f"IN ({firsts})"
        inner = (f"SELECT * FROM ({due}ORDER BY d.next_attempt_at, d.id "
                 f"LIMIT %s) w UNION SELECT d.id, d.channel_id, d.incident_id, "
                 f"d.next_attempt_at FROM {table} d WHERE d.id {ids}")
        head_params = [*Delivery.ACTIVE, *Delivery.ACTIVE]
        params = [*params, int(window), *Delivery.ACTIVE, at, *full]
    else:
        inner = due + f"AND NOT {waits.format(row='d')}"
        params += Delivery.ACTIVE
    channels, projects = Channel._meta.db_table, Project._meta.db_table
    found = sql.fetchall(
        f"{head}SELECT id, channel_id, {waits.format(row='fair')}, seen FROM (SELECT due.*, "
        "ROW_NUMBER() OVER (PARTITION BY p.organisation_id ORDER BY due.next_attempt_at, "
        "due.id) AS turn FROM (SELECT id, channel_id, incident_id, next_attempt_at, "
        "ROW_NUMBER() OVER (PARTITION BY channel_id ORDER BY next_attempt_at, id) AS n, "
        f"COUNT(*) OVER () AS seen FROM ({inner}) first) due "
        f"JOIN {channels} ch ON ch.id = due.channel_id JOIN {projects} p ON p.id = ch.project_id "
        "WHERE due.n <= %s) fair ORDER BY turn, next_attempt_at, id LIMIT %s",
        [*head_params, *Delivery.ACTIVE, *params, 2 * cap, 8 * limit])
    rows = [(pk, channel, bool(wait)) for pk, channel, wait, _ in found]
    return rows, (found[0][3] if found else 0)


def _pick(rows: list[tuple[int, int, bool]], in_flight: Counter, cap: int, limit: int
          ) -> list[int]:
    """Ids to claim of ``rows`` (:func:`_candidates`), in order: those that need not
    wait, while their channel is below ``cap`` (``in_flight`` counts, updated)."""
    picked: list[int] = []
    for pk, channel_id, wait in rows:
        if len(picked) >= limit:
            break
        if not wait and in_flight[channel_id] < cap:
            in_flight[channel_id] += 1
            picked.append(pk)
    return picked


@dataclass
class Attempt:
    """One attempt of a claimed delivery, from :func:`prepare` through
    :func:`attempt` (the HTTP part, no database) to :func:`record`.

    request: the built request, or None when it could not be built (``error``
    says why; not retried). After :func:`attempt`: ``started_at`` /
    ``finished_at`` (the clock before and after), ``duration_ms``, the receiver's
    ``status_code`` (None without an answer), ``error`` ("" on success),
    ``retryable`` and ``retry_after`` (seconds, from ``Retry-After``);
    ``answer``: the start of a 2xx answer's body (:data:`BODY_SNIPPET` bytes), which
    a kind with a ``receipt`` function reads into ``Delivery.receipt``.
    """

    claim: Claim
    delivery: Delivery
    request: OutgoingRequest | OutgoingEmail | None
    error: str = ""
    started_at: datetime | None = None
    finished_at: datetime | None = None
    duration_ms: int = 0
    status_code: int | None = None
    retryable: bool = False
    retry_after: float | None = None
    answer: bytes = b""


def prepare(claims: list[Claim]) -> list[Attempt]:
    """Load the deliveries ``claims`` hold (with their channel, event, incident,
    monitor and project, and what :func:`~alerts.integrations.common.context`
    reads: a few queries for the whole batch) and build their requests. Claims no
    longer held (re-claimed, deleted) are left out."""
    if not claims:
        return []
    leases = {c.delivery_id: c.lease for c in claims}
    rows = [d for d in _by_id(Delivery, leases).values()
            if d.status == Delivery.Status.SENDING and d.lease == leases[d.pk]]
    # One simple statement per related table (an index lookup each; one join of
    # them all cost PostgreSQL more to plan than to run), one instance per row.
    _attach(rows, "channel", Channel)
    events = _attach(rows, "event", IncidentEvent)
    of_incidents = [e for e in events if e.incident_id is not None]
    monitors = _attach(_attach(of_incidents, "incident", Incident), "monitor", Monitor)
    _attach([*monitors, *(e for e in events if e.incident_id is None)], "project", Project)
    common.prefetch_latest(monitors)
    whole = _whole(events)
    built = {d.pk: d for d in rows if Delivery.channel.is_cached(d) and d.event_id in whole}
    return [Attempt(c, built[c.delivery_id], *_build(built[c.delivery_id]))
            for c in claims if c.delivery_id in built]


def _by_id(model, ids) -> dict:
    """Instances of ``model`` with primary keys ``ids``, by pk (missing: deleted)."""
    if not ids:
        return {}
    return {o.pk: o for o in sql.select(model, *sql.where_in(model, "id", list(ids)))}


def _attach(objs: list, name: str, model) -> list:
    """Set each of ``objs``' foreign key ``name`` to its ``model`` instance (one
    query); returns the distinct instances. An object whose related row is gone
    (deleted meanwhile) keeps it unset, and :func:`prepare` leaves it out."""
    related = _by_id(model, {getattr(o, f"{name}_id") for o in objs})
    for o in objs:
        if (target := related.get(getattr(o, f"{name}_id"))) is not None:
            setattr(o, name, target)
    return list(related.values())


def _whole(events: list) -> set[int]:
    """Ids of ``events`` whose incident, monitor and project were all found (a
    notice of no incident: its project)."""
    return {e.pk for e in events if (
        IncidentEvent.project.is_cached(e) if e.incident_id is None else
        IncidentEvent.incident.is_cached(e) and Incident.monitor.is_cached(e.incident)
        and Monitor.project.is_cached(e.incident.monitor))}


def _build(delivery: Delivery) -> tuple[OutgoingRequest | OutgoingEmail | None, str]:
    """(``delivery``'s request, "") or (None, why it cannot be built). A kind with
    ``TAKES_DELIVERY`` gets ``delivery=`` too (Matrix: its id is the transaction
    id; Pushover: the receipts of the incident's earlier deliveries)."""
    channel = delivery.channel
    try:
        kind = KINDS[channel.kind]
        extra = {"delivery": delivery} if getattr(kind, "TAKES_DELIVERY", False) else {}
        if delivery.event.incident_id is None:  # a notice (alerts.notices)
            return kind.build_notice(channel, delivery.event, **extra), ""
        return kind.build_request(channel, delivery.event, **extra), ""
    except Exception as exc:  # any builder failure is a config/data problem: no retry
        with logs.bound(delivery=delivery.pk, incident=delivery.incident_id):
            logger.exception("delivery %s: cannot build the request", delivery.pk)
        return None, f"build error: {type(exc).__name__}: {exc}"


def attempt(a: Attempt, transport: httpx.BaseTransport | None = None, clock=timezone.now
            ) -> None:
    """Send ``a``'s request (no database access: sender threads only do this) and
    fill in its outcome. Never raises for a failed send."""
    a.started_at, started = clock(), time.monotonic()
    if a.request is not None:
        answer = bytearray()
        a.status_code, a.error, a.retryable, a.retry_after = transmit(
            a.request, transport, a.started_at, answer)
        a.answer = bytes(answer)
    a.duration_ms = round((time.monotonic() - started) * 1000)
    a.finished_at = clock()


def record(attempts: list[Attempt]) -> list[str]:
    """Write the outcomes of made attempts in one transaction: their attempt log
    rows, each delivery's new state (only where its claim still holds), the
    channels' health, and :data:`delivery_failed` for each delivery that failed for
    good; then, committed, the attempts' metrics
    (:func:`core.metrics.delivery_attempted`). Returns, in order, each delivery's
    status after it ("" where the claim was lost: the row was re-claimed or deleted
    meanwhile; it is sent again or not at all)."""
    if not attempts:
        return []
    with transaction.atomic():
        if sql.vendor() == "postgresql":
            _no_flush_wait()
        numbers = [a.delivery.attempts + 1 for a in attempts]
        for a, number in zip(attempts, numbers, strict=True):
            _outcome(a.delivery, a, number)
        # one statement: each outcome where its claim still holds (lease and status)
        held = set(sql.update_from_values(
            Delivery, ("id", "lease"), OUTCOME_FIELDS,
            [(a.delivery.pk, a.claim.lease, *(getattr(a.delivery, f) for f in OUTCOME_FIELDS))
             for a in attempts],
            "status = %s", [Delivery.Status.SENDING]))
        lost = [a.delivery.pk for a in attempts if a.delivery.pk not in held]
        # rare: which of the others still exist (their attempt is logged all the same)
        kept = held | set(Delivery.objects.filter(pk__in=lost).values_list("pk", flat=True)
                          if lost else ())
        log, written, statuses = [], [], []
        for a, number in zip(attempts, numbers, strict=True):
            d = a.delivery
            if d.pk not in kept:
                logger.info("delivery %s was deleted while being sent", d.pk)
                statuses.append("")
                continue
            log.append((d.pk, number, a.started_at, a.status_code, a.error[:ERROR_MAX],
                        a.duration_ms))
            if d.pk not in held:
                logger.warning("delivery %s: claim expired while sending; it will be sent again",
                               d.pk)
                statuses.append("")
                continue
            written.append((d, a))
            statuses.append(d.status)
        sql.insert_many(DeliveryAttempt, ATTEMPT_FIELDS, log)  # rows, no instances
        recovered = _record_health([(d.channel_id, d.status, a.error, a.finished_at)
                                    for d, a in written])
        for d, a in written:
            if d.status == Delivery.Status.FAILED:
                delivery_failed.send(sender=Delivery, delivery=d, at=a.finished_at)
        for channel_id, since, at in recovered:
            channel_recovered.send(sender=Channel, channel_id=channel_id, since=since, at=at)
    for d, a in written:
        metrics.delivery_attempted(d.channel.kind, RESULTS[d.status], a.duration_ms / 1000)
        say = logger.warning if d.status == Delivery.Status.FAILED else logger.info
        with logs.bound(delivery=d.pk, incident=d.incident_id):
            say("delivery %s attempt %s to channel %s: %s %s", d.pk, d.attempts, d.channel_id,
                d.status, a.error or a.status_code)
    return statuses


# an attempt's result for cronradar_delivery_attempts_total, by the status it left
RESULTS = {Delivery.Status.DELIVERED: "delivered", Delivery.Status.PENDING: "retry",
           Delivery.Status.FAILED: "failed"}
ATTEMPT_FIELDS = ("delivery_id", "number", "at", "status_code", "error", "duration_ms")
OUTCOME_FIELDS = ("status", "attempts", "last_error", "delivered_at", "next_attempt_at",
                  "rate_limited", "receipt")


def _outcome(d: Delivery, a: Attempt, number: int) -> None:
    """Set ``d``'s :data:`OUTCOME_FIELDS` after its attempt ``number``."""
    now, error = a.finished_at, a.error
    d.attempts, d.last_error = number, error[:ERROR_MAX]
    d.rate_limited = a.status_code == 429
    if a.status_code is not None and 200 <= a.status_code < 300:
        d.status, d.delivered_at, d.next_attempt_at = Delivery.Status.DELIVERED, now, None
        receipt = getattr(KINDS.get(d.channel.kind), "receipt", None)
        if receipt is not None:  # what a later delivery needs of the answer (Pushover)
            d.receipt = receipt(a.answer)
    elif a.retryable and not _exhausted(d, number, now):
        d.status = Delivery.Status.PENDING
        d.next_attempt_at = now + timedelta(seconds=retry_delay(number, a.retry_after))
    else:
        if a.retryable:
            d.last_error = (f"gave up after {number} attempt{'s' * (number > 1)} over "
                            f"{_age(d, now)}: {error}")[:ERROR_MAX]
        d.status, d.next_attempt_at = Delivery.Status.FAILED, None


def send(claim: Claim, *, transport: httpx.BaseTransport | None = None, clock=timezone.now
         ) -> str:
    """Make the attempt ``claim`` was claimed for, on this thread: :func:`prepare`,
    :func:`attempt`, :func:`record`. Returns the delivery's status after it (""
    when the claim was lost).

    transport: the httpx transport (tests pass a mock one; default: one shared,
    connection-pooling transport, :func:`_shared_transport`); clock: the current
    time, read before and after the request (tests pass a controlled one). Never
    raises for a failed send: errors end up in the attempt log, the row and the
    channel.
    """
    prepared = prepare([claim])
    if not prepared:
        return ""
    attempt(prepared[0], transport, clock)
    return record(prepared)[0]


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


def _record_health(outcomes: list[tuple[int, str, str, datetime]]
                   ) -> list[tuple[int, datetime, datetime]]:
    """Channels' ``last_error`` and ``failing_since`` after outcomes (channel id,
    status, error, time), in the order they happened: a failure sets
    ``last_error`` and, unless already failing, ``failing_since`` (and
    ``failing_check_at``, when :mod:`alerts.health` checks it, that much later
    than ``CRONRADAR_CHANNEL_FAILING_AFTER``); a delivery clears them. A channel
    that was failing and delivered catches up (:func:`_catch_up`) when its batch
    ends delivered. Returns (channel id, failing since, delivered at) of each
    channel that was failing and delivered (it recovered, even if it failed again
    later in the batch)."""
    after = timedelta(seconds=settings.CRONRADAR_CHANNEL_FAILING_AFTER)
    # channel -> (its last failure's error, failing since at the end of the batch
    # (None: delivered last), its first delivery's time (None: none in the batch))
    last: dict[int, tuple[str | None, datetime | None, datetime | None]] = {}
    for channel_id, status, error, at in outcomes:
        fail_error, since, delivered = last.get(channel_id, (None, None, None))
        if status == Delivery.Status.DELIVERED:
            last[channel_id] = (fail_error, None, delivered or at)
        else:
            last[channel_id] = (error, since or at, delivered)
    delivered = sorted(ch for ch, (_, _, first) in last.items() if first is not None)
    # The common case (channels that work) is this one statement. The rows are
    # locked, in id order, so that a failing channel recovers exactly once.
    recovering = dict(Channel.objects.select_for_update().filter(pk__in=delivered)
                      .exclude(failing_since=None).order_by("pk")
                      .values_list("pk", "failing_since")) if delivered else {}
    for channel_id, (fail_error, since, first) in last.items():
        if fail_error is None and since is None and channel_id not in recovering:
            continue  # delivered, and was not failing: nothing to write (the common case)
        channel = Channel.objects.filter(pk=channel_id)
        if fail_error is not None:
            channel.update(last_error=fail_error[:ERROR_MAX])
        if channel_id in recovering:  # delivered again (and perhaps failed again since)
            channel.update(failing_since=since, failing_check_at=since and since + after)
            if since is None:
                _catch_up(channel_id, first)
        elif since is not None:
            channel.filter(failing_since=None).update(failing_since=since,
                                                      failing_check_at=since + after)
    return [(ch, recovering[ch], last[ch][2]) for ch in delivered if ch in recovering]


def _catch_up(channel_id: int, at: datetime) -> None:
    """A failing channel delivered at ``at``: its deliveries waiting in backoff after
    a network error, a timeout or a 5xx are due at ``at`` (claimed as the channel's
    cap allows), so a receiver that comes back after an outage gets its backlog
    in seconds, not over the next ten minutes of backoff. Retries under a 429
    (``rate_limited``) keep their time: the receiver asked for it. Hits
    delivery_channel_status."""
    Delivery.objects.filter(channel_id=channel_id, status=Delivery.Status.PENDING,
                            rate_limited=False, next_attempt_at__gt=at
                            ).update(next_attempt_at=at)


def transmit(request, transport: httpx.BaseTransport | None = None, at: datetime | None = None,
             answer: bytearray | None = None) -> tuple[int | None, str, bool, float | None]:
    """Send one built request: an HTTP request (its ``method``, POST unless the
    kind says otherwise), or an email through Django's mail
    backend (its "status code" 250, SMTP's OK, on success). ``at``: when this
    attempt starts (default: now); a signed webhook's ``webhook-timestamp`` and
    ``webhook-signature`` are made for it here, just before the request goes out
    (:meth:`OutgoingRequest.stamped`). Returns (status_code, error, retryable,
    retry_after); never raises for a failed send. The error never holds the
    request's ``redact`` strings (each reads ``***``).

    The request's ``before`` requests go first (:class:`OutgoingRequest`): one to be
    retried ends the attempt there, its error prefixed ``before <n>: `` (the
    main request is not sent); any other answer lets the next go. ``answer``:
    given, it receives the first ``BODY_SNIPPET`` bytes of the main request's 2xx
    answer (Pushover's receipt). ``transport``: the httpx transport the requests
    go out on (tests pass a ``MockTransport``; default: :func:`_shared_transport`)."""
    if isinstance(request, OutgoingEmail):
        return _mail(request)
    transport, at = transport or _shared_transport(), at or timezone.now()
    result = None
    for n, first in enumerate(request.before, 1):
        code, error, retryable, retry_after = _post(transport, first.stamped(at))
        if retryable:
            result = code, f"before {n}: {error}", retryable, retry_after
            break
    code, error, retryable, retry_after = result or _post(transport, request.stamped(at), answer)
    secrets = {*request.redact, *(s for r in request.before for s in r.redact)}
    return code, redacted(error, secrets), retryable, retry_after


def redacted(error: str, secrets: Iterable[str]) -> str:
    """``error`` with each of ``secrets`` read as ``***``: as it is and as a URL
    would quote it (percent-encoded, ``+`` for spaces, upper- or lower-case hex: a
    receiver may echo the URL it was asked for encoded), the longest first (a
    secret inside another must not leave the rest of that one); and the tokens of
    signed incident links (:func:`alerts.links.hide`)."""
    forms = set()
    for secret in secrets:
        if not secret:
            continue
        for form in (secret, quote(secret, safe=""), quote(secret, safe="/"),
                     quote_plus(secret)):
            forms |= {form, re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), form)}
    for form in sorted(forms, key=len, reverse=True):
        error = error.replace(form, "***")
    return links.hide(error)


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
def _shared_transport() -> httpx.BaseTransport:
    """One connection-pooling transport per process (thread-safe): the SSRF guard
    in front of urllib3's keep-alive pools (:mod:`core.transport`; a pool per
    destination keeps up to ``CRONRADAR_DELIVERY_THREADS`` idle connections), and,
    when tracing is on (``OTEL_EXPORTER_OTLP_ENDPOINT``), a span per request as
    httpx's instrumentation makes for its own transport.

    A new one per attempt would cost ~30 ms of CPU (TLS context), which slowed the
    evaluator down when many alerts went out at once (bench/README.md); httpx's
    client and transport cost 1.4-1.8 ms of CPU per request shared by 32 threads
    where this costs 0.55-0.8 ms (``bench/http_clients.py``)."""
    transport = GuardedTransport(Urllib3Transport(per_host=settings.CRONRADAR_DELIVERY_THREADS))
    if settings.OTEL_EXPORTER_OTLP_ENDPOINT:  # cronradar.observability checked it is installed
        from opentelemetry.instrumentation.httpx import SyncOpenTelemetryTransport

        transport = SyncOpenTelemetryTransport(transport)
    return transport


@functools.cache
def _default_headers() -> httpx.Headers:
    """The headers httpx's client sends unless a request sets them (``Accept``,
    ``Accept-Encoding`` of the encodings it decodes, ``Connection: keep-alive``,
    ``User-Agent``): every request still carries them."""
    return httpx.Client(transport=httpx.MockTransport(lambda request: None)).headers


def outgoing_request(request: OutgoingRequest, extensions: dict) -> httpx.Request:
    """The ``httpx.Request`` of ``request`` with ``extensions``: what
    ``httpx.Request(method, url, content=body, headers=...)`` builds from httpx's
    client's default headers (:func:`_default_headers`) updated with the request's,
    header for header in the same order (``Host``, the defaults the request does
    not set, the request's own, then ``Content-Length``; an empty POST, PUT or
    PATCH: ``Content-Length: 0`` after ``Host``), without httpx's steps that
    rebuild the header list three times; the URL parsed once per process
    (:func:`_url`). Raises ``httpx.InvalidURL`` / ``httpx.UnsupportedProtocol``
    for a URL httpx cannot parse, ``UnicodeEncodeError`` for a header that is not
    ASCII, as httpx does."""
    url, body, method = _url(request.url), request.body, request.method.upper()
    names = {name.lower() for name in request.headers}
    headers: list[tuple[bytes | str, bytes | str]] = []
    if "host" not in names and url.host:
        headers.append((b"Host", url.netloc))
    length = "content-length" in names
    if not body and not length and "transfer-encoding" not in names and method in (
            "POST", "PUT", "PATCH"):
        headers.append((b"Content-Length", b"0"))
    headers += [(key, value) for key, lower, value in _default_raw() if lower not in names]
    headers += request.headers.items()
    if body and not length:
        headers.append((b"Content-Length", str(len(body)).encode()))
    outgoing = httpx.Request(method, url, headers=headers, stream=httpx.ByteStream(body),
                             extensions=extensions)
    outgoing.read()  # as content= does: the body is there for transports that read it
    return outgoing


@functools.lru_cache(maxsize=4096)
def _url(text: str) -> httpx.URL:
    """``httpx.URL(text)``, parsed once per URL (a channel sends to the same URL;
    an ``httpx.URL`` is immutable). Raises as ``httpx.URL`` does (not cached)."""
    return httpx.URL(text)


@functools.cache
def _default_raw() -> tuple[tuple[bytes, str, bytes], ...]:
    """(name, its lower case, value) of each of :func:`_default_headers`."""
    return tuple((key, key.decode("latin-1").lower(), value)
                 for key, value in _default_headers().raw)


@functools.cache
def _timeouts(timeout: float) -> dict[str, float]:
    """httpx's ``timeout`` extension: connect, read, write and pool ``timeout`` s
    (the dict is shared: transports only read it)."""
    return httpx.Timeout(timeout).as_dict()


def _post(transport: httpx.BaseTransport, request: OutgoingRequest,
          answer: bytearray | None = None) -> tuple[int | None, str, bool, float | None]:
    """Send ``request`` (its ``method``; redirects are not followed), each connect,
    write and read within ``CRONRADAR_DELIVERY_TIMEOUT`` and all of it within twice
    that (the ``deadline`` of :mod:`core.transport`: the claim lasts 2 x timeout +
    2 s). Reads the answer's body (at most ``DRAIN_MAX`` bytes) so its connection
    can carry the next request (one whose answer was not read to the end is
    closed); keeps ``BODY_SNIPPET`` bytes of it for the error of a failed attempt,
    and in ``answer`` (when given) of a 2xx one."""
    timeout = settings.CRONRADAR_DELIVERY_TIMEOUT
    code, end = None, time.monotonic() + 2 * timeout
    try:
        outgoing = outgoing_request(request, {"timeout": _timeouts(timeout), "deadline": end})
        response = transport.handle_request(outgoing)
        response.request = outgoing
        try:
            code, snippet, size = response.status_code, b"", 0
            for chunk in response.iter_bytes():
                snippet += chunk[:BODY_SNIPPET - len(snippet)]
                size += len(chunk)
                if size > DRAIN_MAX:
                    break  # a long answer: its connection is closed instead
        finally:
            response.close()
    except BlockedDestination as exc:
        return None, f"blocked: {exc}", False, None
    except OSError as exc:  # the name did not resolve (checked by the SSRF guard)
        return None, f"dns error: {exc}", True, None
    except httpx.TimeoutException as exc:
        if code is not None and 200 <= code < 300:
            return code, "", False, None  # answered 2xx, then the body stalled: delivered
        if time.monotonic() >= end - 0.01:  # the overall deadline, not one read
            return None, (f"timeout: no complete answer within the attempt's {2 * timeout:g}s "
                          f"({type(exc).__name__})"), True, None
        return None, f"timeout after {timeout:g}s: {type(exc).__name__}", True, None
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        return None, f"invalid URL: {exc}", False, None
    except httpx.HTTPError as exc:
        if code is not None and 200 <= code < 300:
            return code, "", False, None  # answered 2xx, then the connection broke: delivered
        return None, f"network error: {type(exc).__name__}: {exc}", True, None
    if 200 <= code < 300:
        if answer is not None:
            answer += snippet
        return code, "", False, None
    text = snippet.decode("utf-8", "replace").strip()
    error = f"HTTP {code}: {text}" if text else f"HTTP {code}"
    retry_after = parse_retry_after(response.headers.get("Retry-After"))
    if retry_after is None and code == 429:
        retry_after = body_retry_after(snippet)
    return code, error, code == 429 or code >= 500, retry_after


def body_retry_after(body: bytes) -> float | None:
    """Seconds from a 429 answer's JSON body, ``{"parameters": {"retry_after": 35}}``
    (Telegram's Bot API says it there and sends no ``Retry-After`` header) or
    ``{"errcode": "M_LIMIT_EXCEEDED", "retry_after_ms": 2000}`` (Matrix), or None."""
    try:
        document = json.loads(body)
        if isinstance(document, dict) and "retry_after_ms" in document:
            value = document["retry_after_ms"]
            value = value / 1000 if isinstance(value, int | float) else None
        else:
            value = document["parameters"]["retry_after"]
    except (ValueError, KeyError, TypeError):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return float(value)


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
