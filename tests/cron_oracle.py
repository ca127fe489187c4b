"""A brute-force cron oracle, the primary reference of the schedule property tests.

It shares no code with ``monitors.schedule``: its own reading of the five fields
(names, ranges, steps, ``L``, ``LW``, ``N#k``, ``NL``), its own day rules (from the
calendar module), and instead of walking wall times it looks at every UTC minute
of the range and asks what the wall clock shows then. Slow and obviously right:
only for short ranges.
"""
from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

NAMES = {
    3: {m.upper(): i for i, m in enumerate(calendar.month_abbr) if m},
    4: {d: i for i, d in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"])},
}
BOUNDS = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]
ALIASES = {"@hourly": "0 * * * *", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
           "@weekly": "0 0 * * 0", "@monthly": "0 0 1 * *", "@yearly": "0 0 1 1 *",
           "@annually": "0 0 1 1 *"}
TERM = re.compile(r"^(?:(\*)|(\w+)(?:-(\w+))?)(?:/(\d+))?$")


@dataclass
class Oracle:
    minutes: set
    hours: set
    months: set
    doms: set  # ints, and "L" / "LW"
    dows: set  # ints 0-6, and ("#", weekday, k) / ("L", weekday)
    day_and: bool
    real_clock: bool  # gap wall times skipped, repeated ones run twice

    @classmethod
    def parse(cls, expr: str, kubernetes: bool = False) -> Oracle:
        fields = ALIASES.get(expr.strip().lower(), expr).split()
        sets = [_field(i, text, kubernetes) for i, text in enumerate(fields)]
        dom, dow = fields[2], fields[4]
        if kubernetes:
            day_and = any(_is_star(t) for t in dom.split(",") + dow.split(","))
        else:
            day_and = dom.startswith("*") or dow.startswith("*")
        fixed = not fields[0].startswith("*") and not fields[1].startswith("*")
        return cls(sets[0], sets[1], sets[3], sets[2], {(v % 7 if isinstance(v, int) else v)
                                                        for v in sets[4]},
                   day_and, kubernetes or not fixed)

    def day(self, d: date) -> bool:
        length = calendar.monthrange(d.year, d.month)[1]
        weekday = (d.weekday() + 1) % 7  # 0 = Sunday
        last_weekday = max(x for x in range(length - 2, length + 1)
                           if date(d.year, d.month, x).weekday() < 5)
        dom = (d.day in self.doms or ("L" in self.doms and d.day == length)
               or ("LW" in self.doms and d.day == last_weekday))
        dow = (weekday in self.dows or ("#", weekday, (d.day - 1) // 7 + 1) in self.dows
               or (("L", weekday) in self.dows and d.day > length - 7))
        return (dom and dow) if self.day_and else (dom or dow)

    def wall(self, w: datetime) -> bool:
        return (w.minute in self.minutes and w.hour in self.hours
                and w.month in self.months and self.day(w.date()))


def _is_star(term: str) -> bool:
    head, _, step = term.partition("/")
    return head in ("*", "?") and step in ("", "1")


def _value(i: int, token: str) -> int:
    return NAMES.get(i, {}).get(token.upper(), None) if not token.isdigit() else int(token)


def _field(i: int, text: str, kubernetes: bool = False) -> set:
    lo, hi = BOUNDS[i]
    if i == 4 and kubernetes:
        hi = 6  # robfig/cron: day-of-week is 0-6, so 1/2 means 1-6/2
    out: set = set()
    for term in text.split(","):
        if i == 2 and term.upper() in ("L", "LW"):
            out.add(term.upper())
            continue
        if i == 4 and "#" in term:
            w, k = term.split("#")
            out.add(("#", _value(i, w) % 7, int(k)))
            continue
        if i == 4 and term.upper().endswith("L"):
            out.add(("L", _value(i, term[:-1]) % 7))
            continue
        star, a, b, step = TERM.match(term).groups()
        step = int(step or 1)
        if star or term.startswith("?"):
            first, last = lo, hi
        else:
            first = _value(i, a)
            last = _value(i, b) if b else (hi if step > 1 or "/" in term else first)
        out.update(range(first, last + 1, step))
    return out


def fires(expr: str, zone_name: str, a: datetime, b: datetime,
          kubernetes: bool = False) -> list[datetime]:
    """Fire instants t with a < t <= b, found by looking at every UTC minute.

    Real clock: a minute fires when the wall clock then matches. Debian fixed
    time: a matching wall time fires at its first occurrence only, and wall times
    skipped by a spring-forward gap fire at the first minute after it.
    """
    oracle = Oracle.parse(expr, kubernetes)
    zone = ZoneInfo(zone_name)
    out = []
    t = a.replace(second=0, microsecond=0) + timedelta(minutes=1)
    while t <= b:
        local = t.astimezone(zone)
        wall = local.replace(tzinfo=None)
        if oracle.real_clock:
            hit = oracle.wall(wall)
        else:
            hit = oracle.wall(wall) and local.fold == 0
            skipped = (t - timedelta(minutes=1)).astimezone(zone).replace(tzinfo=None)
            skipped += timedelta(minutes=1)
            while not hit and skipped < wall:  # wall times the clock jumped over
                hit = oracle.wall(skipped)
                skipped += timedelta(minutes=1)
        if hit:
            out.append(t)
        t += timedelta(minutes=1)
    return out
