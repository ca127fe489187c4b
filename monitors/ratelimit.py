"""Ping rate limits and ping counters (docs/multi-tenant.md, "Ping rate limits").

Each ping is counted against two fixed-window limits: its monitor's (the plan's
``pings_per_minute``, else ``CRONRADAR_PING_RATE``) and its organisation's (the
plan's ``org_pings_per_minute``). One counter step (:func:`hit`) counts both,
decides, and adds the ping to its monitor's accepted or refused count of the UTC
month: in Redis one script call (one round trip) when the default cache is Redis
(production), else a thread-safe counter in this process's memory (the embedded
default). The counts are added to the database each minute (:func:`drain`, by
:func:`monitors.usage.flush`).

What a ping is counted against is remembered for at most :data:`TARGET_TTL` seconds
per ping URL and process (:func:`target`: one statement on a miss, none on a hit), so
the ping path makes no extra database statement; a plan change applies within that time.

Fails open: with Redis unreachable every ping goes on (stored as usual, not
counted), one log line a minute (:data:`cache_down`), and Redis is left alone for
:data:`CACHE_RETRY` seconds after each failure.
"""
from __future__ import annotations

import logging
import math
import os
import random
import threading
import time
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cache

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.db.models import Case, F, Value, When
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from accounts.models import Organisation, Plan, Project
from core import logs, sql
from monitors.models import Monitor

log = logging.getLogger(__name__)

PERIODS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600,
           "hour": 3600, "d": 86400, "day": 86400}
TARGET_TTL = 30.0  # seconds a ping URL's monitor, organisation and limits are remembered
# ... at most: each for a random part of it, from TARGET_SPREAD x TARGET_TTL up, so
# the URLs remembered together (a restart, a busy minute) are not all read again at once
TARGET_SPREAD = 0.75
TARGETS_MAX = 100_000  # remembered ping URLs per process (all forgotten when full)
CACHE_RETRY = 5.0
# Redis unreachable: pings go through unlimited and uncounted (a lost ping is worse
# than an unlimited one), one log line a minute.
cache_down = logs.Outage("cache", "ping(s) let through without their rate limit",
                         level=logging.WARNING)


@dataclass(frozen=True)
class Rate:
    """``count`` pings per fixed window of ``window`` seconds (aligned to the Unix
    epoch, so every process agrees on the windows)."""

    count: int
    window: int

    @classmethod
    def parse(cls, text: str) -> Rate | None:
        """``"N/period"`` (``CRONRADAR_PING_RATE``'s form, already checked by the
        settings) or None for ``""``."""
        if not text:
            return None
        count, _, period = text.partition("/")
        return cls(int(count), PERIODS[period])

    def shown(self) -> str:
        """``60 pings a minute``, ``2 pings a second``."""
        unit = {1: "a second", 60: "a minute", 3600: "an hour", 86400: "a day"}[self.window]
        return f"{self.count} ping{'s' if self.count != 1 else ''} {unit}"


@dataclass(frozen=True)
class Target:
    """What one ping URL's pings are counted against: its monitor, the monitor's
    organisation, the organisation's plan name (None without a plan) and the two
    limits (None: no limit). Without a plan (or a plan without a per-monitor rate)
    the per-monitor limit is ``CRONRADAR_PING_RATE`` (``monitor_by_plan`` False)."""

    monitor_id: int
    organisation_id: int
    plan: str | None
    per_monitor: Rate | None
    per_organisation: Rate | None
    monitor_by_plan: bool = False


@dataclass(frozen=True)
class Refusal:
    """A refused ping: which limit (``monitor`` | ``organisation``), the rate, the
    plan's name (None: the setting's limit), the window's end (aware UTC) and the
    seconds until then (whole, at least 1: ``Retry-After``)."""

    limit: str
    rate: Rate
    plan: str | None
    window_start: datetime
    window_end: datetime
    retry_after: int

    def message(self) -> str:
        """The 429's text (names the limit and the plan)."""
        if self.plan is None:
            return (f"too many pings for this monitor: at most {self.rate.count}/"
                    f"{settings.CRONRADAR_PING_RATE.partition('/')[2]} "
                    "(CRONRADAR_PING_RATE); this one was not stored")
        per = "per monitor" if self.limit == "monitor" else "for the whole organisation"
        return (f"too many pings for this {self.limit}: this organisation's plan "
                f"({self.plan}) allows {self.rate.shown()} {per}; this one was not stored")


_targets: dict[tuple, tuple[float, Target]] = {}


@cache
def _target_sql(condition: str) -> str:
    """The statement of :func:`target` for a monitor ``condition`` (SQL on the
    monitor's own columns, as :func:`monitors.pings.lookup` makes it)."""
    return (f"SELECT m.id, p.organisation_id, l.name, l.pings_per_minute, "
            f"l.org_pings_per_minute FROM (SELECT id, project_id FROM "
            f"{Monitor._meta.db_table} WHERE {condition} AND deleted_at IS NULL LIMIT 1) m "
            f"JOIN {Project._meta.db_table} p ON p.id = m.project_id "
            f"JOIN {Organisation._meta.db_table} o ON o.id = p.organisation_id "
            f"LEFT JOIN {Plan._meta.db_table} l ON l.id = o.plan_id")


def target(key: tuple, where: tuple[str, list]) -> Target | None:
    """The :class:`Target` of the ping URL ``key`` (hashable, e.g. ``("u", uuid)``),
    the undeleted monitor ``where`` picks (a SQL condition on its row and its
    parameters: :func:`monitors.pings.lookup`), remembered for a random part of
    :data:`TARGET_TTL` seconds (from :data:`TARGET_SPREAD` of it up); None (not
    remembered) when no monitor matches. A miss costs one statement (prepared on
    PostgreSQL: :mod:`core.sql`)."""
    clock = time.monotonic()
    found = _targets.get(key)
    if found is not None and found[0] > clock:
        return found[1]
    condition, params = where
    row = sql.fetchone(_target_sql(condition), params)
    if row is None:
        _targets.pop(key, None)
        return None
    monitor_id, organisation_id, plan, per_minute, org_per_minute = row
    per_monitor = (Rate(per_minute, 60) if per_minute is not None
                   else Rate.parse(settings.CRONRADAR_PING_RATE))
    per_org = Rate(org_per_minute, 60) if org_per_minute is not None else None
    found_target = Target(monitor_id, organisation_id, plan, per_monitor, per_org,
                          per_minute is not None)
    if len(_targets) >= TARGETS_MAX:
        _targets.clear()
    ttl = TARGET_TTL * (TARGET_SPREAD + (1 - TARGET_SPREAD) * random.random())  # noqa: S311
    _targets[key] = (clock + ttl, found_target)
    return found_target


def forget_url(key: tuple) -> None:
    """Forget what :func:`target` remembers of ping URL ``key`` (its monitor is gone)."""
    _targets.pop(key, None)


def forget() -> None:
    """Forget every remembered :class:`Target` (tests; a plan change is otherwise
    seen within :data:`TARGET_TTL` seconds)."""
    _targets.clear()


def _month(now: datetime) -> str:
    return f"{now.year:04d}-{now.month:02d}"


def _window(rate: Rate, now: float) -> int:
    return int(now // rate.window)


def hit(t: Target, now: datetime) -> Refusal | None:
    """Count one ping of ``t`` at ``now``: None when it may be stored, else the
    :class:`Refusal` (the ping is not stored). Counts it in its monitor's accepted
    or refused pings of ``now``'s month. The first refusal of a monitor in a window
    records the refusal on the monitor (:func:`refused`: one UPDATE per monitor per
    window). With Redis unreachable: None (:data:`cache_down`)."""
    stamp = now.timestamp()
    m, o = t.per_monitor, t.per_organisation
    keys = (f"m:{t.monitor_id}:{m.window}:{_window(m, stamp)}" if m else "",
            f"o:{t.organisation_id}:{o.window}:{_window(o, stamp)}" if o else "")
    limits = (m.count if m else 0, o.count if o else 0)
    ttls = (m.window + 1 if m else 0, o.window + 1 if o else 0)
    counters = backend()
    if counters is not MEMORY and cache_down.recent(CACHE_RETRY):
        return None  # Redis failed just now: don't wait on it per ping
    try:
        over, first = counters.hit(keys, limits, ttls, f"{t.monitor_id}:{_month(now)}")
    except RedisError as exc:
        cache_down.failed(log, exc)
        return None
    if counters is not MEMORY:
        cache_down.ok(log)
    if not over:
        return None
    rate = m if over == 1 else o
    start = datetime.fromtimestamp(_window(rate, stamp) * rate.window, UTC)
    end = datetime.fromtimestamp((_window(rate, stamp) + 1) * rate.window, UTC)
    by_plan = over == 2 or t.monitor_by_plan  # else CRONRADAR_PING_RATE refused it
    refusal = Refusal("monitor" if over == 1 else "organisation", rate,
                      t.plan if by_plan else None, start, end,
                      max(1, math.ceil(rate.window - stamp % rate.window)))
    if first:
        refused(t.monitor_id, refusal, now)
    return refusal


def refused(monitor_id: int, refusal: Refusal, now: datetime) -> None:
    """Record on the monitor that its pings are refused in ``refusal``'s window: its
    refusal streak goes on (a window that starts where the last one ended) or a new
    one starts at ``now``. One UPDATE."""
    Monitor.objects.filter(pk=monitor_id).update(
        refused_since=Case(When(refused_until__gte=refusal.window_start,
                                then=F("refused_since")), default=Value(now)),
        refused_until=refusal.window_end)


def drain() -> dict[tuple[int, date], tuple[int, int]]:
    """The counts since the last drain, taken away from the counters:
    ``{(monitor id, month's first day): (accepted, refused)}``. Raises RedisError
    when Redis is unreachable (the counts stay there)."""
    drained: dict[tuple[int, date], list[int]] = {}
    for field, n in backend().drain().items():
        monitor_id, month, what = field.split(":")
        year, mon = month.split("-")
        counts = drained.setdefault((int(monitor_id), date(int(year), int(mon), 1)), [0, 0])
        counts[0 if what == "p" else 1] += int(n)
    return {key: (a, r) for key, (a, r) in drained.items()}


def give_back(counts: dict[tuple[int, date], tuple[int, int]]) -> None:
    """Add ``counts`` (as :func:`drain` returns them) back to the counters (a flush
    whose database write failed)."""
    fields = {}
    for (monitor_id, month), (accepted, refused_n) in counts.items():
        prefix = f"{monitor_id}:{month.year:04d}-{month.month:02d}"
        fields[f"{prefix}:p"], fields[f"{prefix}:r"] = accepted, refused_n
    backend().add({k: v for k, v in fields.items() if v})


# --- the two counter stores ------------------------------------------------------------

class Memory:
    """The counters in this process's memory (no Redis: the embedded default is one
    process). Thread-safe: one lock around each step."""

    def __init__(self):
        self._lock = threading.Lock()
        self._windows: dict[str, tuple[int, float]] = {}  # key -> (count, expires)
        self._flags: dict[str, float] = {}  # refusal recorded in a window -> expires
        self._usage: dict[str, int] = {}
        self._pruned = 0.0

    def hit(self, keys: tuple[str, str], limits: tuple[int, int], ttls: tuple[int, int],
            usage: str) -> tuple[int, bool]:
        """As the Redis script: (0 accepted | 1 over the monitor's limit | 2 over the
        organisation's, whether this is the monitor's first refusal in the window)."""
        clock = time.monotonic()
        with self._lock:
            if clock - self._pruned > 10:
                self._windows = {k: v for k, v in self._windows.items() if v[1] > clock}
                self._flags = {k: v for k, v in self._flags.items() if v > clock}
                self._pruned = clock
            over = 0
            for i in (0, 1):
                if not limits[i]:
                    continue
                count, expires = self._windows.get(keys[i], (0, clock + ttls[i]))
                if expires <= clock:
                    count, expires = 0, clock + ttls[i]
                self._windows[keys[i]] = (count + 1, expires)
                if count + 1 > limits[i]:
                    over = i + 1
                    break
            field = f"{usage}:{'r' if over else 'p'}"
            self._usage[field] = self._usage.get(field, 0) + 1
            if not over:
                return 0, False
            flag = f"{usage.split(':')[0]}:{keys[over - 1]}"
            first = self._flags.get(flag, 0) <= clock
            if first:
                self._flags[flag] = clock + ttls[over - 1]
            return over, first

    def drain(self) -> dict[str, int]:
        with self._lock:
            usage, self._usage = self._usage, {}
        return usage

    def add(self, fields: dict[str, int]) -> None:
        with self._lock:
            for field, n in fields.items():
                self._usage[field] = self._usage.get(field, 0) + n

    def clear(self) -> None:
        """Forget every count (tests)."""
        with self._lock:
            self._windows, self._flags, self._usage = {}, {}, {}


# KEYS: the monitor's window counter, the organisation's ("" : no limit), the usage
# hash, the refusal flag prefix; ARGV: the two limits (0: none), their TTLs, the
# usage field prefix ("<monitor id>:<YYYY-MM>").
HIT = """
local over = 0
for i = 1, 2 do
  local limit = tonumber(ARGV[i])
  if limit > 0 then
    local n = redis.call('INCR', KEYS[i])
    if n == 1 then redis.call('EXPIRE', KEYS[i], ARGV[i + 2]) end
    if n > limit then over = i break end
  end
end
if over == 0 then
  redis.call('HINCRBY', KEYS[3], ARGV[5] .. ':p', 1)
  return {0, 0}
end
redis.call('HINCRBY', KEYS[3], ARGV[5] .. ':r', 1)
local first = redis.call('SET', KEYS[4] .. KEYS[over], 1, 'NX', 'EX', ARGV[over + 2])
return {over, first and 1 or 0}
"""


class Redis:
    """The counters in Redis (the default cache's server, under its ``KEY_PREFIX``),
    shared by every process."""

    def __init__(self, client, prefix: str, pool=None):
        self.client, self.prefix, self.usage = client, prefix, prefix + "usage"
        self.pool = pool  # the connection pool the client is on (see backend())
        self.script = client.register_script(HIT)
        self._held = threading.local()  # conn, pid: _evalsha's connection

    def hit(self, keys: tuple[str, str], limits: tuple[int, int], ttls: tuple[int, int],
            usage: str) -> tuple[int, bool]:
        """:meth:`Memory.hit` in one script call (one round trip)."""
        monitor, p = usage.split(":")[0], self.prefix
        script_keys = [p + keys[0], p + keys[1], self.usage, f"{p}refused:{monitor}:"]
        script_args = [*limits, *ttls, usage]
        over, first = (self._evalsha(script_keys, script_args)
                       or self.script(keys=script_keys, args=script_args, client=self.client))
        return int(over), bool(first)

    def _evalsha(self, keys: list[str], args: list) -> list | None:
        """The script's answer from one ``EVALSHA`` on a connection this thread
        holds (made by the pool, with its settings; not checked out of it per ping),
        without redis-py's command layers (its retries, argument checks and
        observability hooks: about half the CPU of counting a ping); None when it
        did not answer plainly (not loaded on the server, a connection that failed
        at once, such as one the server closed: it is closed), for the caller to run
        it as redis-py does, retries and all. Raises RedisError's TimeoutError when
        Redis did not answer within the socket timeout (not run again: a Redis that
        hangs costs a ping one timeout, and the script may have counted it) and
        RedisError for any other error the server answers."""
        held = self._held
        conn = getattr(held, "conn", None)
        if conn is None or held.pid != os.getpid():  # not in a forked child: its own
            conn = held.conn = self.pool.make_connection()
            held.pid = os.getpid()
        try:
            conn.send_command("EVALSHA", self.script.sha, len(keys), *keys, *args)
            return conn.read_response()
        except NoScriptError:  # the server lost the script (a restart)
            return None
        except RedisTimeoutError:
            conn.disconnect()  # reconnects on its next command
            raise
        except (RedisConnectionError, OSError):
            conn.disconnect()
            return None

    def drain(self) -> dict[str, int]:
        pipe = self.client.pipeline(transaction=True)  # read and delete at once
        pipe.hgetall(self.usage)
        pipe.delete(self.usage)
        usage, _ = pipe.execute()
        return {k.decode(): int(v) for k, v in usage.items()}

    def add(self, fields: dict[str, int]) -> None:
        pipe = self.client.pipeline(transaction=False)
        for field, n in fields.items():
            pipe.hincrby(self.usage, field, n)
        pipe.execute()


MEMORY = Memory()
_redis: dict[tuple[int, str], Redis] = {}


def backend() -> Memory | Redis:
    """Redis when the default cache is Redis (``REDIS_URL``), else :data:`MEMORY`.

    One :class:`Redis` (a client and its registered script) per connection pool
    of the cache (Django keeps one per cache instance, so one per thread), made on
    the pool's first use. Django's ``get_client`` makes a new client object on
    every call: keyed by that, this held one more client per ping (a leak of about
    50 KB a ping, and a third of the web workers' CPU, bench/ping_http.sh)."""
    cache = caches["default"]
    if not isinstance(cache, RedisCache):
        return MEMORY
    pool = cache._cache._get_connection_pool(write=True)
    prefix = f"{cache.key_prefix}:ping-rate:"
    store = _redis.get((id(pool), prefix))
    if store is None or store.pool is not pool:
        client = cache._cache.get_client(None, write=True)  # a client on that pool
        store = _redis[(id(pool), prefix)] = Redis(client, prefix, pool)
    return store
