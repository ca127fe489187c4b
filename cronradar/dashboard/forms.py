"""Form helpers of the dashboard: durations as a number and a unit (stored as whole
seconds), the IANA zone list, ``datetime-local`` values read in a zone, and a
plain-text description with its links made clickable."""
from __future__ import annotations

import functools
import zoneinfo
from datetime import datetime
from decimal import Decimal, InvalidOperation

from django.utils.html import escape, urlize
from django.utils.safestring import SafeString, mark_safe

UNITS = {"days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}


def split_seconds(seconds: int | None) -> tuple[str, str]:
    """A stored duration shown exactly in its largest whole unit: 3600 -> ("1",
    "hours"), 90 -> ("90", "seconds"); None -> ("", "seconds")."""
    if seconds is None or seconds == "":
        return "", "seconds"
    seconds = int(seconds)
    for unit, size in UNITS.items():
        if seconds and seconds % size == 0:
            return str(seconds // size), unit
    return str(seconds), "seconds"


def join_seconds(number: str, unit: str) -> tuple[int | str | None, str]:
    """A typed number and unit as whole seconds: ("1.5", "hours") -> (5400, "");
    ("", _) -> (None, ""); a problem -> (the text, message). A text that is no
    number at all goes on as typed (the serializer's message says what it takes)."""
    number = number.strip()
    if number == "":
        return None, ""
    if unit not in UNITS:
        return number, f"unknown unit {unit!r}: use {', '.join(UNITS)}"
    try:
        seconds = Decimal(number) * UNITS[unit]
    except InvalidOperation:
        return number, ""
    if not seconds.is_finite() or seconds != seconds.to_integral_value():
        return number, f"{number} {unit} is not a whole number of seconds"
    return int(seconds), ""


@functools.cache
def zone_names() -> tuple[str, ...]:
    """Every IANA zone name this installation can load, sorted (the forms' lists):
    not the host's own files (``localtime``, ``posixrules``) nor tzdata's
    placeholder ``Factory`` (no place keeps its time)."""
    return tuple(sorted(zoneinfo.available_timezones() - {"localtime", "posixrules", "Factory"}))


def local_input(moment: datetime | None, zone) -> str:
    """``moment`` as a ``datetime-local`` value in ``zone`` to the second
    ("2026-12-24T20:00:45"; the input takes ``step="1"`` so the seconds show)."""
    if moment is None:
        return ""
    return moment.astimezone(zone).replace(tzinfo=None).isoformat(timespec="seconds")


def read_local(value: str, zone, shown: datetime | None = None) -> datetime | None:
    """A ``datetime-local`` value (or ISO 8601 with an offset) as an aware time; one
    without an offset is read in ``zone``: a wall time the clock shows twice
    (fall-back) is its first occurrence, one it skips (spring-forward) is read with
    the offset before the change, so it lands as far after the gap's start as it
    is written after it (02:30 in a 02:00-03:00 gap: 03:30 new time). None when
    it is not a date-time.

    ``shown`` is the stored time the form showed (by :func:`local_input`, in the same
    ``zone``): a value that reads as the wall time shown is ``shown`` itself, so a
    form saved unchanged keeps a fall-back hour's second occurrence and the
    fraction of a second the input cannot show."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo:
        return moment
    if shown is not None and moment == datetime.fromisoformat(local_input(shown, zone)):
        return shown
    return moment.replace(tzinfo=zone, fold=0)


def linked_text(text: str) -> SafeString:
    """Plain ``text`` escaped, with its URLs made links and nothing else interpreted."""
    return mark_safe(urlize(escape(text), nofollow=True))  # noqa: S308 (escaped first)
