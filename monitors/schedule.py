"""Cron schedule engine: validation and fire-time arithmetic for cron monitors.

Pure functions only: no Django, no ORM, no clock. Every "now" is an argument.
All returned instants are timezone-aware ``datetime`` objects in UTC.

Expressions
-----------
Five fields, separated by whitespace::

    minute (0-59)  hour (0-23)  day-of-month (1-31)  month (1-12)  day-of-week (0-7)

Each field is a comma-separated list of terms: ``*``, ``*/step``, ``N``,
``N-M``, ``N-M/step`` and ``N/step`` (which means ``N-max/step``, so ``59/15``
in the minute field is just minute 59). Month names (``JAN``..``DEC``) and
weekday names (``SUN``..``SAT``) are accepted case-insensitively. In the
day-of-week field both 0 and 7 mean Sunday. A range must not run backwards,
and a one-value range is that value, as in Vixie cron: ``5-5`` and ``5-5/2``
are minute 5 (croniter 7.0.0 reads ``5-5`` as every minute, and both croniter
and cronsim 2.8 read ``5-5/2`` as ``5/2``).

Under DEBIAN semantics four extras are also accepted (the same spelling as
the cronsim library, which Healthchecks uses): ``L`` in day-of-month (last day
of the month), ``LW`` in day-of-month (last weekday, Monday to Friday, of the
month), ``N#k`` in day-of-week (k-th weekday N of the month, k = 1..5) and
``NL`` in day-of-week (last weekday N of the month).

The aliases ``@hourly @daily @midnight @weekly @monthly @yearly @annually``
expand to their five-field form. ``@reboot``, seconds fields (six or seven
fields), ``?``, ``W`` (nearest weekday), ``H`` and other non-standard syntax are
rejected with a message saying so, and so is any expression that can never
fire (``0 0 31 2 *``).

Day-of-month and day-of-week
----------------------------
DEBIAN (Vixie/Debian cron, as implemented by cronsim): if either field *starts
with* ``*`` the two fields are combined with AND, otherwise with OR. So
``0 0 24-31 * 4`` fires on days 24-31 *and* on every Thursday, while
``0 0 1-7 * */7`` (the day-of-week field starts with ``*``) fires only on
Sundays that fall on days 1-7.

KUBERNETES (robfig/cron v3, used by the Kubernetes CronJob controller): AND if
either field contains a ``*`` or ``?`` term without a step larger than 1,
otherwise OR. ``*/2`` therefore does *not* switch to AND here. Day-of-week is
0-6 (7 is rejected, as Kubernetes rejects it) and the DEBIAN extras are not
accepted.

Time zones and daylight-saving time
-----------------------------------
An expression is matched against wall-clock time in an IANA zone. Wall times
that fall into a spring-forward gap or into a repeated fall-back interval are
resolved like this:

DEBIAN, "fixed-time" job (neither the minute nor the hour field starts with
``*``):
    * a wall time inside a gap fires once, at the first real instant after the
      gap (``1 2 * * *`` in Europe/Berlin on 2020-03-29 fires at 03:00+02:00);
      several gap wall times collapse into that one fire;
    * a repeated wall time fires once, at its first occurrence (fold=0).

DEBIAN, "wildcard" job (minute or hour field starts with ``*``) and every
KUBERNETES job follow the real clock:
    * a wall time inside a gap never fires;
    * a repeated wall time fires at both instants (``0 * * * *`` in
      America/Los_Angeles on 2026-11-01 fires at 01:00-07:00, 01:00-08:00 and
      02:00-08:00; under KUBERNETES ``0 2 * * *`` in Europe/Berlin on
      2023-10-29 fires at 02:00+02:00 and again at 02:00+01:00, see
      kubernetes/kubernetes#121594).

Implementation
--------------
The expression is parsed into sets once (cached), and the answers of
next_fire, count_fires and last_fires are cached too (LRU, keyed by their
arguments): the evaluator asks the same for every monitor of a schedule whose
slot ends together (10,000 monitors on ``0 * * * *`` at the top of the hour).
Matching wall times are
enumerated in order (whole minutes, naive local time), each wall time is mapped
to 0, 1 or 2 UTC instants per the rules above, and the instants are merged
through a small heap so they come out strictly increasing and de-duplicated.
Wall-clock order and instant order differ only inside a repeated interval, so
the enumeration starts a fold's length before the local time of the search
start, and an instant is only released once no later wall time can map before
it.

croniter is deliberately not used for the arithmetic: its default day_or
logic gets ``0 0 1-7 * */7`` wrong (case hcblog-vixie-star-dow-and, fixed only
with implement_cron_bug=True), it intersects ``#`` with day-of-month where
cronsim unions them, its own DST handling double-fires fixed-time jobs
(k8s-121594-berlin-fallback-run-once, croniter-267-dublin-negative-dst), it
reads ``5-5`` as every minute and a day-of-month of ``1,*`` as ``*`` (AND
instead of Vixie's OR), and older versions had the bugs the other cases in
shared/cases/cron_cases.json record. Enumerating parsed sets directly is
short, exact and fast (tens of microseconds per next_fire), and the tests
check it against cronsim 2.8 and a minute-by-minute brute-force scan.
"""

from __future__ import annotations

import calendar
import heapq
import zoneinfo
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

__all__ = [
    "DEBIAN",
    "KUBERNETES",
    "SEMANTICS",
    "ScheduleError",
    "fires_between",
    "next_fire",
    "next_interval",
    "previous_fire",
    "shortest_gap",
    "validate_cron",
    "validate_timezone",
]

DEBIAN = "debian"
KUBERNETES = "kubernetes"
SEMANTICS = (DEBIAN, KUBERNETES)

_MINUTE = timedelta(minutes=1)
_SECOND = timedelta(seconds=1)
_DAY = timedelta(days=1)
# A schedule that passes validation fires at least once every ~40 years
# (Feb 29 on a given weekday across the non-leap 2100); searching 100 years of
# wall time is therefore enough and bounds the work for anything else.
_HORIZON_YEARS = 100
# How far to look for a UTC offset drop near a search start: the zone's largest
# drop since 1970 (_max_drop: 7 h for Antarctica/Vostok in 1994, 1 h for most
# DST zones, none for UTC), found once per zone. Times before 1970 are not
# supported (Pacific/Kwajalein dropped 23 h in 1969): public functions reject
# them and backward searches stop there.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DST_STEP = timedelta(minutes=30)
_MAX_EXPR_LEN = 512

_ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_FIELD_NAMES = ("minute", "hour", "day-of-month", "month", "day-of-week")
_MONTH_NAMES = {
    name: i + 1
    for i, name in enumerate(
        ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
    )
}
_DOW_NAMES = {name: i for i, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))}
_MAX_DAYS = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class ScheduleError(ValueError):
    """Invalid schedule; str(e) is a user-facing message."""


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class _Spec:
    """A parsed expression. Day-of-week values are 0-6, 0 = Sunday."""

    expr: str  # normalized text
    minutes: tuple[int, ...]  # sorted
    hours: tuple[int, ...]  # sorted
    months: frozenset[int]
    doms: frozenset[int]
    dom_last: bool  # 'L' in day-of-month
    dom_last_weekday: bool  # 'LW' in day-of-month
    dows: frozenset[int]
    dow_nth: frozenset[tuple[int, int]]  # (weekday, k) from 'N#k'
    dow_last: frozenset[int]  # weekdays from 'NL'
    day_and: bool  # combine day-of-month and day-of-week with AND
    real_clock: bool  # DST: follow the real clock (else Debian fixed-time rules)


def _bad(field: int, text: str, why: str) -> ScheduleError:
    return ScheduleError(f"bad {_FIELD_NAMES[field]} field '{text}': {why}")


def _number(field: int, text: str, token: str, lo: int, hi: int) -> int:
    upper = token.upper()
    if field == 3 and upper in _MONTH_NAMES:
        return _MONTH_NAMES[upper]
    if field == 4 and upper in _DOW_NAMES:
        return _DOW_NAMES[upper]
    if not token.isascii() or not token.isdigit():
        if token == "":
            raise _bad(field, text, "empty value")
        why = f"'{token}' is not a valid value"
        if field == 2 and upper.endswith("W"):
            why += ": W (the nearest weekday) is not supported; use LW for the last " \
                   "weekday of the month, or list the days"
        elif any(ch in upper for ch in "LW#H?"):
            why += " (this extension is not supported here)"
        raise _bad(field, text, why)
    value = int(token)
    if not lo <= value <= hi:
        raise _bad(field, text, f"{value} is out of range {lo}-{hi}")
    return value


def _parse_field(field: int, text: str, semantics: str) -> tuple[set, set, set, set, bool]:
    """Parse one field.

    Returns (values, last, nth, last_weekday, star): last holds "L" / "LW" given
    in day-of-month; star says whether the field counts as '*' for the
    day-of-month/day-of-week rule.
    """
    lo, hi = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))[field]
    if field == 4 and semantics == KUBERNETES:
        hi = 6
    values: set[int] = set()
    nth: set[tuple[int, int]] = set()
    last_weekday: set[int] = set()
    last: set[str] = set()
    k8s_star = False
    for term in text.split(","):
        if term == "":
            raise _bad(field, text, "empty list item")
        upper = term.upper()
        if semantics == DEBIAN and field == 2 and upper in ("L", "LW"):
            last.add(upper)
            continue
        if semantics == DEBIAN and field == 4 and "#" in term:
            day, _, k = term.partition("#")
            wd = _number(field, text, day, lo, hi) % 7
            if not (k.isascii() and k.isdigit() and 1 <= int(k) <= 5):
                raise _bad(field, text, f"'#{k}' must be #1 to #5")
            nth.add((wd, int(k)))
            continue
        if semantics == DEBIAN and field == 4 and upper.endswith("L") and len(term) > 1:
            last_weekday.add(_number(field, text, term[:-1], lo, hi) % 7)
            continue
        rng, slash, step_text = term.partition("/")
        if rng == "?" and semantics == DEBIAN:
            raise _bad(field, text, "'?' is not supported; use '*'")
        step = 1
        if slash:
            if not (step_text.isascii() and step_text.isdigit()):
                raise _bad(field, text, f"step '{step_text}' is not a positive number")
            step = int(step_text)
            if step == 0:
                raise _bad(field, text, "step must be at least 1")
        if rng in ("*", "?"):
            start, end = lo, hi
            if step == 1:
                k8s_star = True
        elif "-" in rng:
            a, _, b = rng.partition("-")
            start = _number(field, text, a, lo, hi)
            end = _number(field, text, b, lo, hi)
            if end < start:
                raise _bad(field, text, f"range {a}-{b} runs backwards")
        else:
            start = _number(field, text, rng, lo, hi)
            end = hi if slash else start  # 'N/step' means 'N-max/step'
        values.update(range(start, end + 1, step))
    if field == 4:
        values = {v % 7 for v in values}
    star = k8s_star if semantics == KUBERNETES else text.startswith("*")
    return values, last, nth, last_weekday, star


def _day_matches(spec: _Spec, day: int, weekday: int, month_days: int) -> bool:
    """Does a date match? weekday: 0 = Sunday; month_days: length of its month."""
    left = month_days - day  # days after this one in its month
    dom = (day in spec.doms or (spec.dom_last and not left)
           or (spec.dom_last_weekday and 1 <= weekday <= 5 and (
               not left or (weekday == 5 and left <= 2))))  # a Friday before the weekend
    dow = (
        weekday in spec.dows
        or (weekday, (day + 6) // 7) in spec.dow_nth
        or (weekday in spec.dow_last and day + 7 > month_days)
    )
    return (dom and dow) if spec.day_and else (dom or dow)


def _can_fire(spec: _Spec) -> bool:
    """Exact check that some date matches.

    Whether a date matches depends only on its month, day, weekday and the
    length of its month. Every month occurs with every weekday for its 1st and
    every possible length (Feb: 28 and 29) within the next few decades, so it
    is enough to try all those layouts.
    """
    for month in spec.months:
        for length in (28, 29) if month == 2 else (_MAX_DAYS[month],):
            for first in range(7):
                for day in range(1, length + 1):
                    if _day_matches(spec, day, (first + day - 1) % 7, length):
                        return True
    return False


@lru_cache(maxsize=4096)
def _parse(expr: str, semantics: str) -> _Spec:
    if semantics not in SEMANTICS:
        raise ScheduleError(f"unknown semantics {semantics!r}; expected one of {SEMANTICS}")
    if not isinstance(expr, str):
        raise ScheduleError("schedule must be a string")
    if len(expr) > _MAX_EXPR_LEN:
        raise ScheduleError(f"schedule is too long (more than {_MAX_EXPR_LEN} characters)")
    parts = expr.split()
    if not parts:
        raise ScheduleError("schedule is empty")
    if len(parts) == 1 and parts[0].startswith("@"):
        alias = parts[0].lower()
        if alias == "@reboot":
            raise ScheduleError("@reboot is not supported: it has no schedule to monitor")
        if alias.startswith("@every"):
            raise ScheduleError("@every is not supported: use a fixed-interval monitor instead")
        if alias not in _ALIASES:
            raise ScheduleError(
                f"unknown alias '{parts[0]}'; use one of {', '.join(sorted(_ALIASES))}"
            )
        parts = _ALIASES[alias].split()
    if len(parts) != 5:
        msg = f"expected 5 fields (minute hour day-of-month month day-of-week), got {len(parts)}"
        if len(parts) in (6, 7):
            msg += "; seconds and year fields are not supported"
        raise ScheduleError(msg)
    parsed = [_parse_field(i, text, semantics) for i, text in enumerate(parts)]
    minutes, hours = parsed[0][0], parsed[1][0]
    doms, dom_specials, _, _, dom_star = parsed[2]
    dows, _, dow_nth, dow_last, dow_star = parsed[4]
    spec = _Spec(
        expr=" ".join(parts),
        minutes=tuple(sorted(minutes)),
        hours=tuple(sorted(hours)),
        months=frozenset(parsed[3][0]),
        doms=frozenset(doms),
        dom_last="L" in dom_specials,
        dom_last_weekday="LW" in dom_specials,
        dows=frozenset(dows),
        dow_nth=frozenset(dow_nth),
        dow_last=frozenset(dow_last),
        day_and=dom_star or dow_star,
        real_clock=(
            semantics == KUBERNETES or parts[0].startswith("*") or parts[1].startswith("*")
        ),
    )
    if not _can_fire(spec):
        raise ScheduleError(
            f"schedule '{spec.expr}' never fires: no date matches its day-of-month, "
            f"month and day-of-week fields"
        )
    return spec


# ------------------------------------------------------------------ wall-time enumeration


def _month_days(d: date) -> int:
    return calendar.monthrange(d.year, d.month)[1]


def _date_matches(spec: _Spec, d: date) -> bool:
    return _day_matches(spec, d.day, d.isoweekday() % 7, _month_days(d))


def _walls(spec: _Spec, edge: datetime, step: int) -> Iterator[datetime]:
    """Matching naive wall times from ``edge`` on, for up to _HORIZON_YEARS.

    step +1: ascending, from ``edge`` rounded up to a whole minute (included);
    step -1: descending, from ``edge`` rounded down (included), never before 1970.
    """
    forward = step > 0
    whole = edge.replace(second=0, microsecond=0)
    if forward and whole != edge:
        whole += _MINUTE
    d = whole.date()
    last_year = (min(d.year + _HORIZON_YEARS, 9999) if forward
                 else max(d.year - _HORIZON_YEARS, _EPOCH.year))
    first = True
    while (d.year <= last_year) if forward else (d.year >= last_year):
        if d.month not in spec.months:  # jump to the next (previous) month
            if forward and (d.year, d.month) == (9999, 12):
                return
            if forward:
                d = date(d.year + 1, 1, 1) if d.month == 12 else date(d.year, d.month + 1, 1)
            else:
                d = d.replace(day=1) - _DAY
            first = False
            continue
        if _date_matches(spec, d):
            hours = spec.hours
            if first:
                hours = (hours[bisect_left(hours, whole.hour):] if forward
                         else hours[:bisect_right(hours, whole.hour)])
            for h in hours if forward else reversed(hours):
                minutes = spec.minutes
                if first and h == whole.hour:
                    minutes = (minutes[bisect_left(minutes, whole.minute):] if forward
                               else minutes[:bisect_right(minutes, whole.minute)])
                for m in minutes if forward else reversed(minutes):
                    yield datetime(d.year, d.month, d.day, h, m)
        first = False
        if forward and d == date.max:
            return
        d += _DAY if forward else -_DAY


# ---------------------------------------------------------------- wall time -> instants


def _resolve(wall: datetime, zone: zoneinfo.ZoneInfo) -> tuple[datetime, datetime]:
    """UTC instants for a naive wall time read with fold=0 and fold=1.

    Equal: an ordinary wall time. u0 < u1: repeated (fall-back) wall time, both
    real. u0 > u1: the wall time is inside a spring-forward gap and neither is
    real (zoneinfo applies the pre-transition offset for fold=0).
    """
    u0 = wall.replace(tzinfo=zone).astimezone(UTC)
    u1 = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    return u0, u1


def _gap_end(zone: zoneinfo.ZoneInfo, before: datetime, after: datetime) -> datetime:
    """First instant of the new offset, for before < transition <= after (UTC)."""
    target = after.astimezone(zone).utcoffset()
    lo, hi = int(before.timestamp()), int(after.timestamp())
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, zone).utcoffset() == target:
            hi = mid
        else:
            lo = mid
    return datetime.fromtimestamp(hi, UTC)


def _instants(spec: _Spec, zone: zoneinfo.ZoneInfo, u0: datetime, u1: datetime) -> list[datetime]:
    if u0 == u1:
        return [u0]
    if u0 < u1:  # repeated wall time
        return [u0, u1] if spec.real_clock else [u0]
    # inside a gap
    return [] if spec.real_clock else [_gap_end(zone, u1, u0)]


@lru_cache(maxsize=1024)
def _max_drop(zone: zoneinfo.ZoneInfo) -> timedelta:
    """The largest fall of ``zone``'s UTC offset at one transition, 1970-2100
    (sampled every 12 h; ~50 ms, once per zone)."""
    worst, t = timedelta(0), _EPOCH
    prev = t.astimezone(zone).utcoffset()
    while t.year < 2100:
        t += timedelta(hours=12)
        offset = t.astimezone(zone).utcoffset()
        worst = max(worst, prev - offset)
        prev = offset
    return worst


def _offset_swing(zone: zoneinfo.ZoneInfo, at: datetime, sign: int) -> timedelta:
    """Largest amount the UTC offset drops (sign=+1, looking forward from `at`)
    or exceeded the offset at `at` (sign=-1, looking back), within the zone's
    largest drop (:func:`_max_drop`) of `at`: no drop further away can reorder
    wall times around `at`."""
    base = at.astimezone(zone).utcoffset()
    worst = timedelta(0)
    step, t = _DST_STEP * sign, at
    for _ in range(int((_max_drop(zone) + _DST_STEP) / _DST_STEP)):
        try:
            t += step
            diff = (base - t.astimezone(zone).utcoffset()) * sign
        except OverflowError:
            break
        worst = max(worst, diff)
    return worst


def _iter(spec: _Spec, zone: zoneinfo.ZoneInfo, edge: datetime, step: int) -> Iterator[datetime]:
    """Fire instants (UTC-aware): step +1, those > edge strictly increasing;
    step -1, those <= edge strictly decreasing."""
    forward = step > 0
    heap: list[tuple[float, datetime]] = []  # keyed so the next one out is first
    last = None
    gap_edge = None  # real clock: wall times beyond this edge are in a known gap

    def release(bound: datetime | None):
        nonlocal last
        while heap and (bound is None or (heap[0][1] <= bound if forward
                                          else heap[0][1] >= bound)):
            inst = heapq.heappop(heap)[1]
            if inst != last:
                last = inst
                yield inst

    try:
        # Any instant beyond edge has a wall time beyond local(edge) shifted by the
        # largest offset change near edge (a fall-back ahead, a fall-back behind).
        local = edge.astimezone(zone).replace(tzinfo=None)
        start = local - step * _offset_swing(zone, edge, step)
        for wall in _walls(spec, start, step):
            if gap_edge is not None and (wall < gap_edge if forward else wall >= gap_edge):
                continue
            u0, u1 = _resolve(wall, zone)
            if u0 > u1 and spec.real_clock:
                # Skip the rest of the gap without resolving each wall time.
                end = _gap_end(zone, u1, u0)
                gap_edge = (end.astimezone(zone).replace(tzinfo=None) if forward
                            else (end - _SECOND).astimezone(zone).replace(tzinfo=None) + _SECOND)
                continue
            for inst in _instants(spec, zone, u0, u1):
                if inst > edge if forward else inst <= edge:
                    heapq.heappush(heap, (step * inst.timestamp(), inst))
            if heap:
                # Every later wall time is a minute further, and none of them can map
                # to an instant before (after) the nearer instant of that wall time.
                bound = (min(_resolve(wall + _MINUTE, zone)) if forward
                         else max(_resolve(wall - _MINUTE, zone)))
                yield from release(bound)
    except OverflowError:
        pass
    yield from release(None)


def _aware_utc(value: datetime, name: str) -> datetime:
    if not isinstance(value, datetime):
        raise TypeError(f"{name} must be a datetime")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware")
    if value < _EPOCH:
        raise ScheduleError(f"{name} is before 1970: not supported")
    return value.astimezone(UTC)


# ---------------------------------------------------------------------- public API


@lru_cache(maxsize=1024)
def validate_timezone(name: str) -> zoneinfo.ZoneInfo:
    """Return the ZoneInfo for an IANA zone name such as "Europe/Berlin".

    Raises ScheduleError("unknown time zone 'X'") for anything that is not a
    loadable IANA key (including empty or non-string names and path tricks).
    """
    # "localtime" and "posixrules" are host-dependent files, not IANA zones.
    if (
        not isinstance(name, str)
        or not name
        or name != name.strip()
        or name in ("localtime", "posixrules")
    ):
        raise ScheduleError(f"unknown time zone {_shown(name)}")
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ScheduleError(f"unknown time zone {_shown(name)}") from None


def _shown(name) -> str:
    """A refused zone name as an error quotes it: repr'd, cut at 64 characters (the
    longest a monitor's zone may be), so a 100 KB value is not echoed back."""
    text = repr(name)
    return text if len(text) <= 66 else f"{text[:64]}…'"


def validate_cron(expr: str, tz: str = "UTC", semantics: str = DEBIAN) -> str:
    """Validate a cron expression and return its normalized form.

    expr: five whitespace-separated fields or an alias (see the module
    docstring). tz: IANA zone name. semantics: DEBIAN or KUBERNETES.

    Returns the expression with aliases expanded to five fields and whitespace
    collapsed to single spaces, e.g. "@daily" -> "0 0 * * *".

    Raises ScheduleError, with a message fit for the user, for: a wrong number
    of fields (including six/seven-field expressions with seconds or years),
    bad field syntax or out-of-range values, unsupported aliases such as
    @reboot, an unknown zone, unknown semantics, and expressions that can never
    fire: either no calendar date matches ("0 0 31 2 *"; "0 0 31 2 0" is fine
    under the OR rule), or the job follows the real clock and every matching
    wall time from 2020 on (100 years searched) falls into a DST gap of `tz`
    ("* 2 25-31 3 */7" in Europe/Berlin). Takes well under 50 ms.
    """
    spec = _parse(expr, semantics)
    zone = validate_timezone(tz)
    if spec.real_clock:
        # A real-clock job skips gap wall times; make sure something is left.
        # Fixed-time jobs always fire (gap wall times move to the gap's end).
        ref = datetime(2020, 1, 1, tzinfo=UTC)
        if next(_iter(spec, zone, ref, 1), None) is None:
            raise ScheduleError(
                f"schedule '{spec.expr}' never fires in time zone {tz}: every matching "
                f"time falls into a daylight-saving gap"
            )
    return spec.expr


@lru_cache(maxsize=4096)
def next_fire(expr: str, tz: str, after: datetime, semantics: str = DEBIAN) -> datetime:
    """First fire time strictly later than `after`.

    expr: cron expression (see validate_cron). tz: IANA zone the expression is
    evaluated in. after: timezone-aware datetime in any zone. semantics:
    DEBIAN or KUBERNETES (DST and day-matching rules, see module docstring).

    Returns a timezone-aware UTC datetime (whole local minute, or the end of a
    DST gap for a DEBIAN fixed-time job). Raises ScheduleError for an invalid
    expression or zone or if nothing fires within 100 years; ValueError if
    `after` is naive.
    """
    spec = _parse(expr, semantics)
    zone = validate_timezone(tz)
    after_utc = _aware_utc(after, "after")
    result = next(_iter(spec, zone, after_utc, 1), None)
    if result is None:
        raise ScheduleError(f"schedule '{spec.expr}' does not fire after {after.isoformat()}")
    return result


def previous_fire(
    expr: str, tz: str, at_or_before: datetime, semantics: str = DEBIAN
) -> datetime | None:
    """Latest fire time <= `at_or_before` (timezone-aware, any zone).

    Same arguments and rules as next_fire. Returns a UTC-aware datetime, or
    None if nothing fired in the preceding 100 years. Raises ScheduleError for
    an invalid expression or zone; ValueError if `at_or_before` is naive.
    """
    spec = _parse(expr, semantics)
    zone = validate_timezone(tz)
    until = _aware_utc(at_or_before, "at_or_before")
    return next(_iter(spec, zone, until, -1), None)


def fires_between(
    expr: str,
    tz: str,
    after: datetime,
    until: datetime,
    semantics: str = DEBIAN,
    limit: int = 1000,
) -> list[datetime]:
    """Fire times t with after < t <= until, ascending, at most `limit` of them.

    Same rules as next_fire; both bounds are timezone-aware datetimes in any
    zone. Returns a list of UTC-aware datetimes (empty if until <= after or
    limit <= 0). Raises ScheduleError for an invalid expression or zone;
    ValueError for naive bounds.
    """
    return list(_between(expr, tz, after, until, semantics, limit, 1))


def last_fires(expr: str, tz: str, after: datetime, until: datetime, semantics: str = DEBIAN,
               limit: int = 100) -> list[datetime]:
    """The latest `limit` fire times t with after < t <= until, ascending.

    Same rules and errors as fires_between; walks backwards from `until`, so
    the cost depends on `limit`, not on how long the range is.
    """
    return list(_last_fires(expr, tz, after, until, semantics, limit))


@lru_cache(maxsize=256)
def _last_fires(expr: str, tz: str, after: datetime, until: datetime, semantics: str,
                limit: int) -> tuple[datetime, ...]:
    return tuple(_between(expr, tz, after, until, semantics, limit, -1))[::-1]


def _between(expr: str, tz: str, after: datetime, until: datetime, semantics: str,
             limit: int, step: int) -> Iterator[datetime]:
    """Up to `limit` fire times in (after, until], walking from `after` forward
    (step +1) or from `until` backward (step -1)."""
    spec = _parse(expr, semantics)
    zone = validate_timezone(tz)
    after_utc = _aware_utc(after, "after")
    until_utc = _aware_utc(until, "until")
    if limit <= 0 or until_utc <= after_utc:
        return
    for n, inst in enumerate(_iter(spec, zone, after_utc if step > 0 else until_utc, step)):
        if n >= limit or (inst > until_utc if step > 0 else inst <= after_utc):
            return
        yield inst


@lru_cache(maxsize=1024)
def count_fires(
    expr: str, tz: str, after: datetime, until: datetime, semantics: str = DEBIAN
) -> int:
    """How many fire times t there are with after < t <= until: exact, never capped.

    Same rules and errors as fires_between. Whole local days with no UTC offset
    change are counted from the expression's sets (minutes x hours when the date
    matches); only the two ends of the range and days with a DST change are
    enumerated, so ten years of ``* * * * *`` costs about 3,650 day checks, not
    5 million fire times.
    """
    spec = _parse(expr, semantics)
    zone = validate_timezone(tz)
    cursor = _aware_utc(after, "after")
    until_utc = _aware_utc(until, "until")
    if until_utc <= cursor:
        return 0
    per_day = len(spec.minutes) * len(spec.hours)
    count = 0
    day = cursor.astimezone(zone).date() + _DAY
    last = until_utc.astimezone(zone).date() - _DAY
    while day <= last:
        bounds = _clean_day(zone, day)
        if bounds is not None:
            start, end = bounds  # fires in [start, end) are the day's wall times, 1:1
            count += _count_enumerated(spec, zone, cursor, start - _MICRO)
            if day.month in spec.months and _date_matches(spec, day):
                count += per_day
            cursor = end - _MICRO
        day += _DAY
    return count + _count_enumerated(spec, zone, cursor, until_utc)


_MICRO = timedelta(microseconds=1)


def _clean_day(zone: zoneinfo.ZoneInfo, day: date) -> tuple[datetime, datetime] | None:
    """(first instant, first instant of the next day) of local date `day` when the
    day is exactly 24 h long with one UTC offset throughout, else None."""
    start, start_fold = _resolve(datetime(day.year, day.month, day.day), zone)
    nxt = day + _DAY
    end, end_fold = _resolve(datetime(nxt.year, nxt.month, nxt.day), zone)
    if start != start_fold or end != end_fold or end - start != _DAY:
        return None
    offset = start.astimezone(zone).utcoffset()
    for hours in (6, 12, 18):
        if (start + timedelta(hours=hours)).astimezone(zone).utcoffset() != offset:
            return None
    return start, end


def _count_enumerated(spec: _Spec, zone: zoneinfo.ZoneInfo, after: datetime,
                      until: datetime) -> int:
    """Fire times in (after, until] counted one by one (short ranges only)."""
    if until <= after:
        return 0
    n = 0
    for inst in _iter(spec, zone, after, 1):
        if inst > until:
            break
        n += 1
    return n


@lru_cache(maxsize=1024)
def shortest_gap(expr: str, tz: str, after: datetime, semantics: str = DEBIAN,
                 fires: int = 1000) -> timedelta | None:
    """The shortest time between two consecutive fire times among the first
    `fires` fire times later than `after` (None if fewer than two fire within
    100 years). Same rules and errors as next_fire; a DST change can make one gap
    shorter than the others (a fall-back hour fired twice)."""
    spec = _parse(expr, semantics)
    zone = validate_timezone(tz)
    shortest, previous = None, None
    for n, inst in enumerate(_iter(spec, zone, _aware_utc(after, "after"), 1)):
        if n >= fires:
            break
        if previous is not None and (shortest is None or inst - previous < shortest):
            shortest = inst - previous
        previous = inst
    return shortest


def next_interval(last: datetime, period: timedelta) -> datetime:
    """Next expected time of a fixed-interval monitor: last + period.

    last: datetime (aware, any zone; returned in the same zone). period: a
    positive timedelta. Raises ValueError if period is not positive.
    """
    if period <= timedelta(0):
        raise ValueError("period must be positive")
    return last + period
