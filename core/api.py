"""API plumbing every app's endpoints share (``monitors.api``, ``alerts.api``,
``accounts.api``, ``insights.api``): lookups that answer 404, query-parameter
parsing with 400s that name the parameter, unknown body fields refused, cursor
paging with a ``Link`` header, and the DRF exception handler.
"""
from collections.abc import Mapping
from datetime import UTC, datetime

from django.http import Http404
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

MAX_LIMIT = 1000
MAX_PK = 2**63 - 1
LIMIT = OpenApiParameter("limit", int, description=f"at most this many, 1-{MAX_LIMIT} "
                         "(default 100)")
CURSOR = OpenApiParameter("cursor", str, description="where the previous page ended: take "
                          'it from the `Link: <…>; rel="next"` header')
PAGING = [LIMIT, CURSOR,
          OpenApiParameter("since", str, description="only from this time on (ISO 8601, with "
                           "an offset)"),
          OpenApiParameter("until", str, description="only before this time (ISO 8601)")]


NOT_A_STRING = "must be a string"
NOT_A_NUMBER = "must be a number"
NOT_A_BOOLEAN = "must be true or false"


class RejectUnknown:
    """Serializer mixin for every serializer the API reads a body with: a body
    field the serializer does not have is a 400 (``{"colour": ["unknown field"]}``)
    instead of being ignored, and a string field (any ``CharField``: slugs, URLs,
    e-mail addresses; also each item of a list of strings) given a number or a
    boolean is a 400 (``{"note": ["must be a string"]}``) where DRF would turn it
    into text: the schema says ``type: string``. When the data is a JSON API body
    (the serializer's ``request`` is DRF's, its content type JSON), a number field
    takes only a JSON number (``{"grace": ["must be a number"]}`` for ``"10"`` or
    ``true``) and a boolean field only ``true`` or ``false`` (``{"paused": ["must be
    true or false"]}`` for ``"true"`` or ``1``), as the schema's ``integer`` and
    ``boolean`` say; the dashboard's forms and Healthchecks' /api/v3/ (a Django
    request: form strings, or values :mod:`monitors.healthchecks` checked) keep
    DRF's conversions. Read-only fields are accepted and ignored, so what a GET
    returned can be sent back."""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["unknown field"] for name in unknown})
            strict = _json_body(self.context.get("request"))
            if wrong := {name: [message] for name, value in data.items()
                         if not self.fields[name].read_only
                         and (message := _misshapen(self.fields[name], value, strict))}:
                raise serializers.ValidationError(wrong)
        return super().to_internal_value(data)


def _json_body(request) -> bool:
    """Whether ``request`` is an API request whose body is JSON (DRF's ``Request``)."""
    return isinstance(request, Request) and "json" in (request.content_type or "")


def _misshapen(field, value, strict: bool) -> str:
    """Why ``value`` does not have the JSON type ``field`` takes ("" when it has, or
    when the field's own checks are to say: null, other shapes). Numbers and
    booleans are checked only when ``strict``."""
    field = getattr(field, "inner", field)  # alerts.api.AlertingValue wraps its field
    if isinstance(field, serializers.ListField) and isinstance(value, list):
        return next((m for item in value if (m := _misshapen(field.child, item, strict))), "")
    if isinstance(field, serializers.CharField) and isinstance(value, (bool, int, float)):
        return NOT_A_STRING
    if not strict or value is None:
        return ""
    if isinstance(field, serializers.BooleanField) and not isinstance(value, bool):
        return NOT_A_BOOLEAN
    if isinstance(field, (serializers.IntegerField, serializers.FloatField,
                          serializers.DecimalField)) and (
            isinstance(value, bool) or not isinstance(value, (int, float))):
        return NOT_A_NUMBER
    return ""


def moment(request, name: str) -> datetime | None:
    """A time query parameter (ISO 8601 with an offset or Z), None when absent."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        value = parse_datetime(raw.replace(" ", "+")) if len(raw) <= 40 else None
        if value is not None and value.tzinfo is not None:
            value.astimezone(UTC)  # years 1 and 9999 with an offset overflow here
    except (ValueError, OverflowError):  # an offset of 24 h or more, a date out of range
        value = None
    if value is None or value.tzinfo is None:
        raise serializers.ValidationError(
            {name: ["must be an ISO 8601 time with an offset, e.g. 2026-01-05T12:00:00Z"]})
    return value


class CursorList:
    """Mixin for list views of a time series (runs, pings, incidents, deliveries):
    newest first, a bare JSON list of at most ``?limit=`` rows, ``?since=``/
    ``?until=`` on ``time_field``, and when more rows follow a ``Link: <url>;
    rel="next"`` header whose URL carries ``cursor`` (the last id sent; keyset
    paging, so rows arriving meanwhile neither repeat nor go missing). Newest by
    id unless a list says otherwise (:meth:`newest_first` and its bounds)."""

    time_field = "pk"
    pagination_class = None

    @extend_schema(parameters=PAGING)
    def list(self, request, *args, **kwargs):
        qs = self.filter_queryset(self.get_queryset())
        since, until = moment(request, "since"), moment(request, "until")
        if since is not None:
            qs = self.since(qs, since)
        if until is not None:
            qs = self.until(qs, until)
        if (after := cursor(request)) is not None:
            qs = self.after(qs, after)
        n = limit(request)
        rows = list(self.newest_first(qs)[:n + 1])
        response = Response(self.get_serializer(rows[:n], many=True).data)
        if len(rows) > n:
            link_next(request, response, rows[n - 1].pk)
        return response

    # The order and bounds of the list, for a list whose order is not its ids'
    # (runs and pings: by time, monitors.history).
    def since(self, qs, at):
        """Rows of ``qs`` whose ``time_field`` is ``at`` or later."""
        return qs.filter(**{f"{self.time_field}__gte": at})

    def until(self, qs, at):
        """Rows of ``qs`` whose ``time_field`` is before ``at``."""
        return qs.filter(**{f"{self.time_field}__lt": at})

    def after(self, qs, pk: int):
        """Rows of ``qs`` after the row ``pk`` in the list's order."""
        return qs.filter(pk__lt=pk)

    def newest_first(self, qs):
        """``qs`` in the list's order, newest first."""
        return qs.order_by("-pk")


def cursor(request) -> int | None:
    """``?cursor=``: the id where the previous page ended (from the ``Link``
    header), None when absent; 400 when it is not an id."""
    raw = request.query_params.get("cursor")
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit() and 0 < int(raw) <= MAX_PK):
        raise serializers.ValidationError({"cursor": ["not a cursor of this list: "
                                                      "use the Link header's URL"]})
    return int(raw)


def link_next(request, response, last: int) -> None:
    """Set ``response``'s ``Link: <url>; rel="next"``: this request's URL with every
    query parameter kept (filters, ``limit``) and ``cursor`` the ``last`` id sent."""
    query = request.query_params.copy()
    query["cursor"] = str(last)
    url = request.build_absolute_uri(request.path) + "?" + query.urlencode()
    response["Link"] = f'<{url}>; rel="next"'


def exception_handler(exc, context):
    """DRF's handler, with every 404 saying only ``{"detail": "Not found."}``: the
    answer for another tenant's object is the same as for one that never existed."""
    from rest_framework.views import exception_handler as drf_handler

    if isinstance(exc, Http404):
        exc = Http404()
    return drf_handler(exc, context)


def get_or_404(queryset, pk, **filters):
    """Row ``pk`` of ``queryset`` (already limited to the caller's projects by
    :func:`accounts.tenancy.visible`) matching ``filters``, or 404 (also for
    out-of-range ids)."""
    if not 0 < int(pk) <= MAX_PK:
        raise Http404
    obj = queryset.filter(pk=pk, **filters).first()
    if obj is None:
        raise Http404
    return obj


def limit(request) -> int:
    """``?limit=``: 1-1000, default 100; anything else is a 400."""
    raw = request.query_params.get("limit", "100")
    if not (raw.isascii() and raw.isdigit() and 1 <= int(raw) <= MAX_LIMIT):
        raise serializers.ValidationError({"limit": [f"must be an integer from 1 to {MAX_LIMIT}"]})
    return int(raw)


def flag(request, name: str) -> bool | None:
    """A boolean query parameter (1/true/yes, 0/false/no), None when absent."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if raw.lower() in ("1", "true", "yes"):
        return True
    if raw.lower() in ("0", "false", "no"):
        return False
    raise serializers.ValidationError({name: ["must be true or false"]})


def object_id(request, name: str) -> int | None:
    """An id query parameter (``?monitor=3``), None when absent; 400 otherwise."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit() and 0 < int(raw) <= MAX_PK):
        article = "an" if name[0] in "aeiou" else "a"
        raise serializers.ValidationError({name: [f"must be {article} {name} id"]})
    return int(raw)
