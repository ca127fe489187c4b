"""The schedule preview: a cron expression in words and its next fire times, as the
monitor form shows them while the expression is typed.

:func:`preview` is the domain function (plain data in, plain data out; the clock
is an argument); :class:`SchedulePreview` is ``GET /api/v1/schedule-preview/``
around it. Fire times come from :mod:`monitors.schedule` (the engine the
evaluator uses), the words from cron-descriptor (:func:`words`, which the
dashboard's schedule column uses too).
"""
from __future__ import annotations

import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Profile
from monitors import schedule

COUNT = 5
_SECOND = timedelta(seconds=1)


class Dst(StrEnum):
    """How a fire time meets a daylight-saving change (in the monitor's zone)."""

    OFFSET_CHANGED = "offset_changed"
    """its UTC offset differs from the previous fire time's (for the first, from now's)"""
    GAP_END = "gap_end"
    """it is the first instant after a skipped (spring-forward) hour: under debian
    semantics a fixed-time job's wall times in the skipped hour fire here"""
    REPEATED = "repeated"
    """its wall time happens twice (fall-back); ``fold`` says which occurrence"""


MEANING = {Dst.OFFSET_CHANGED: "UTC offset changed", Dst.GAP_END: "right after a skipped hour",
           Dst.REPEATED: "a repeated hour"}


@dataclass(frozen=True)
class Fire:
    """One fire time: ``at`` in the monitor's zone, ``caller_at`` in the caller's,
    ``dst`` the codes that apply (empty: none), ``fold`` 0/1 for a repeated wall
    time (which occurrence), else None."""

    at: datetime
    caller_at: datetime
    dst: tuple[Dst, ...]
    fold: int | None

    def as_json(self) -> dict:
        return {"at": self.at.isoformat(), "caller_at": self.caller_at.isoformat(),
                "dst": [str(d) for d in self.dst], "fold": self.fold}

    @property
    def at_text(self) -> str:
        """``2026-03-29 03:00 CEST +02:00``: ``at`` for people."""
        return _text(self.at)

    @property
    def caller_text(self) -> str:
        """``caller_at`` as :attr:`at_text` shows ``at``."""
        return _text(self.caller_at)

    def note(self) -> str:
        """The DST codes in words ("" when none), for the form."""
        notes = [MEANING[d] for d in self.dst]
        if self.fold is not None:
            notes[-1] += ", first time" if self.fold == 0 else ", second time"
        return "; ".join(notes)


def _text(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M %Z} {moment.isoformat()[-6:]}"


@dataclass(frozen=True)
class Preview:
    """What :func:`preview` answers: the normalised ``schedule``, its ``words``, the
    two zones and the next fire times."""

    schedule: str
    words: str
    timezone: str
    caller_timezone: str
    cron_semantics: str
    fires: tuple[Fire, ...]

    def as_json(self) -> dict:
        return {"schedule": self.schedule, "description": self.words,
                "timezone": self.timezone, "caller_timezone": self.caller_timezone,
                "cron_semantics": self.cron_semantics,
                "fires": [f.as_json() for f in self.fires]}


def preview(expr: str, tz: str, semantics: str, caller_tz: str, now: datetime,
            count: int = COUNT) -> Preview:
    """The next ``count`` fire times of cron ``expr`` strictly after ``now`` (aware),
    evaluated in zone ``tz`` under ``semantics`` (``debian`` | ``kubernetes``), each
    also shown in ``caller_tz``, with the DST codes of :class:`Dst`.

    Raises :class:`monitors.schedule.ScheduleError` with the engine's own message
    for an invalid expression, zone or semantics, or one that can never fire.
    """
    if not expr.strip():
        raise schedule.ScheduleError("required: a 5-field cron expression or @daily …")
    normal = schedule.validate_cron(expr, tz, semantics)
    zone, caller_zone = schedule.validate_timezone(tz), schedule.validate_timezone(caller_tz)
    fires, before = [], now
    for _ in range(count):
        at = schedule.next_fire(normal, tz, before, semantics)
        fires.append(_fire(at, before, zone, caller_zone))
        before = at
    return Preview(normal, words(normal), tz, caller_tz, semantics, tuple(fires))


def _fire(at: datetime, before: datetime, zone: zoneinfo.ZoneInfo,
          caller_zone: zoneinfo.ZoneInfo) -> Fire:
    local = at.astimezone(zone)
    codes = []
    if local.utcoffset() != before.astimezone(zone).utcoffset():
        codes.append(Dst.OFFSET_CHANGED)
    if (at - _SECOND).astimezone(zone).utcoffset() < local.utcoffset():
        codes.append(Dst.GAP_END)
    wall = local.replace(tzinfo=None)
    first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    second = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
    fold = None
    if first < second:  # a wall time the fall-back repeats
        codes.append(Dst.REPEATED)
        fold = 0 if at == first else 1
    return Fire(local, at.astimezone(caller_zone), tuple(codes), fold)


MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
          "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
          "@hourly": "0 * * * *"}


def words(expr: str) -> str:
    """A cron expression in words via cron-descriptor ("At 03:00, Monday through
    Friday"); the expression itself when cron-descriptor cannot describe it."""
    from cron_descriptor import CasingTypeEnum, ExpressionDescriptor, Options

    options = Options()
    options.use_24hour_time_format = True
    options.casing_type = CasingTypeEnum.Sentence
    try:
        return ExpressionDescriptor(plain_cron(expr), options).get_description()
    except Exception:  # an expression it cannot describe: show the expression
        return expr


def plain_cron(schedule: str) -> str:
    """``schedule`` as cron-descriptor reads it best: macros expanded (it does not
    know them), and a day-of-week field naming Sunday twice (0 and 7: ``0-7``,
    ``1-7``, ``0,7``) without the repeat ("every day", not "Sunday through
    Sunday")."""
    schedule = MACROS.get(schedule.strip().lower(), schedule.strip())
    fields = schedule.split()
    if len(fields) != 5:
        return schedule
    days: set[int] = set()
    for part in fields[4].split(","):
        low, _, high = part.partition("-")
        if not (low.isascii() and low.isdigit() and (not high or (high.isascii()
                                                                and high.isdigit()))):
            return schedule  # names, steps, *: left as they are
        days.update(d % 7 for d in range(int(low), int(high or low) + 1))
    if days == set(range(7)):
        if fields[2] != "*":  # a restricted day of month ORs with it: not the same as *
            return schedule
        fields[4] = "*"
    elif "7" in fields[4].replace("-", ",").split(",") and 0 in days and len(
            fields[4].split(",")) > 1:
        fields[4] = ",".join(str(d) for d in sorted(days))
    return " ".join(fields)


def caller_zone(request) -> str:
    """The caller's zone name: a person's profile zone (UTC until chosen, or when
    the stored name no longer loads); UTC for an API key."""
    if getattr(request, "auth", None) is not None or not request.user.is_authenticated:
        return "UTC"
    name = Profile.objects.filter(user=request.user).values_list("timezone", flat=True).first()
    try:
        return schedule.validate_timezone(name or "UTC").key
    except schedule.ScheduleError:
        return "UTC"


class ScheduleFireSerializer(serializers.Serializer):
    """One fire time of the preview."""

    at = serializers.DateTimeField(help_text="ISO 8601 with the offset, in `timezone`")
    caller_at = serializers.DateTimeField(help_text="the same instant in `caller_timezone`")
    dst = serializers.ListField(child=serializers.ChoiceField([d.value for d in Dst]),
                                help_text="offset_changed: the UTC offset differs from the "
                                          "previous fire time's (the first: from now's); "
                                          "gap_end: the first instant after a skipped hour; "
                                          "repeated: a wall time the clock shows twice")
    fold = serializers.IntegerField(allow_null=True,
                                    help_text="for a repeated wall time: 0 the first "
                                              "occurrence, 1 the second; else null")


class SchedulePreviewSerializer(serializers.Serializer):
    """The answer of ``GET /api/v1/schedule-preview/``."""

    schedule = serializers.CharField(help_text="the expression normalised (@daily: 0 0 * * *)")
    description = serializers.CharField(help_text="the schedule in words")
    timezone = serializers.CharField()
    caller_timezone = serializers.CharField(help_text="the person's profile zone; UTC for a "
                                                      "key")
    cron_semantics = serializers.CharField()
    fires = ScheduleFireSerializer(many=True, help_text=f"the next {COUNT} fire times after now")


class SchedulePreview(APIView):
    """``GET /api/v1/schedule-preview/?schedule=&timezone=&cron_semantics=``: a cron
    schedule in words and its next five fire times (any signed-in person or key;
    writes nothing). 400 ``{"schedule": [...]}`` with the engine's message for an
    expression that is invalid or can never fire."""

    @extend_schema(parameters=[
        OpenApiParameter("schedule", str, required=True, description="a cron expression"),
        OpenApiParameter("timezone", str, description="IANA zone (default UTC)"),
        OpenApiParameter("cron_semantics", str, enum=list(schedule.SEMANTICS),
                         description="default debian")],
        responses=SchedulePreviewSerializer)
    def get(self, request):
        from django.utils import timezone

        q = request.query_params
        tz, semantics = q.get("timezone") or "UTC", q.get("cron_semantics") or schedule.DEBIAN
        if semantics not in schedule.SEMANTICS:
            raise serializers.ValidationError(
                {"cron_semantics": [f"must be one of {', '.join(schedule.SEMANTICS)}"]})
        try:
            schedule.validate_timezone(tz)
        except schedule.ScheduleError as e:
            raise serializers.ValidationError({"timezone": [str(e)]}) from None
        try:
            found = preview(q.get("schedule", ""), tz, semantics, caller_zone(request),
                            timezone.now())
        except schedule.ScheduleError as e:
            raise serializers.ValidationError({"schedule": [str(e)]}) from None
        return Response(found.as_json())
