"""``GET /api/v1/metrics/``: job health in the Prometheus text exposition format
(version 0.0.4, https://prometheus.io/docs/instrumenting/exposition_formats/),
for the dashboards teams already have.

Any key of the project (read-only included) as ``Authorization: Bearer <key>``
(Prometheus ``authorization: {credentials: …}``), or a signed-in person: the
monitors of every project the caller can see. Series, each labelled ``project``,
``monitor`` (the slug) and ``name``:

- ``cronradar_monitor_up``: 0 while the monitor is down, else 1;
- ``cronradar_monitor_status{status=…}``: 1 for its status (new, up, running,
  late, down, paused), 0 for the others;
- ``cronradar_monitor_last_ping_age_seconds``: seconds since its last ping
  (absent before the first);
- ``cronradar_monitor_last_run_duration_seconds``: the last finished run's
  duration (absent before one);
- ``cronradar_monitor_open_incidents``: 1 while an incident is open, else 0;
- ``cronradar_pings_dropped_total``: pings refused by the per-ping-URL rate limit.
"""
from django.db.models import Exists, F, OuterRef, Subquery
from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.views import APIView

from accounts import tenancy
from alerts.models import Incident
from monitors import slots
from monitors.api import STATUSES
from monitors.models import Monitor, Run

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
HELP = {
    "cronradar_monitor_up": ("gauge", "0 while the monitor is down, else 1"),
    "cronradar_monitor_status": ("gauge", "1 for the monitor's current status"),
    "cronradar_monitor_last_ping_age_seconds": ("gauge", "seconds since the last ping"),
    "cronradar_monitor_last_run_duration_seconds": ("gauge", "the last finished run's duration"),
    "cronradar_monitor_open_incidents": ("gauge", "1 while an incident is open"),
    "cronradar_pings_dropped_total": ("counter", "pings refused by the ping rate limit"),
}


def _label(value: str) -> str:
    """A label value escaped as the text format wants (backslash, quote, newline)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.3f}"


def render(monitors, now) -> str:
    """The exposition text for ``monitors`` (annotated as :func:`exposition` does)."""
    series: dict[str, list[str]] = {name: [] for name in HELP}
    for m in monitors:
        labels = (f'project="{_label(m.project.name)}",monitor="{_label(m.slug)}",'
                  f'name="{_label(m.name)}"')
        status = slots.status(m, now, running=m.is_running, incident_open=m.incident_open)
        series["cronradar_monitor_up"].append(f"{{{labels}}} {0 if status == 'down' else 1}")
        for s in STATUSES:
            series["cronradar_monitor_status"].append(
                f'{{{labels},status="{s}"}} {1 if s == status else 0}')
        if m.last_ping_at is not None:
            age = max(0.0, (now - m.last_ping_at).total_seconds())
            series["cronradar_monitor_last_ping_age_seconds"].append(
                f"{{{labels}}} {_number(age)}")
        if m.last_duration is not None:
            series["cronradar_monitor_last_run_duration_seconds"].append(
                f"{{{labels}}} {_number(m.last_duration.total_seconds())}")
        series["cronradar_monitor_open_incidents"].append(
            f"{{{labels}}} {1 if m.incident_open else 0}")
        series["cronradar_pings_dropped_total"].append(f"{{{labels}}} {m.dropped_pings}")
    lines = []
    for name, (kind, text) in HELP.items():
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        lines += [name + row for row in series[name]]
    return "\n".join(lines) + "\n"


class Metrics(APIView):
    """``GET /api/v1/metrics/``: see the module docstring."""

    @extend_schema(responses={200: OpenApiResponse(description="Prometheus text format")})
    def get(self, request):
        last_run = (Run.objects.filter(monitor=OuterRef("pk"), ended_at__isnull=False,
                                       started_at__isnull=False).order_by("-ended_at")
                    .annotate(took=F("ended_at") - F("started_at")).values("took")[:1])
        monitors = (tenancy.visible(request, Monitor.objects.filter(deleted_at__isnull=True))
                    .select_related("project")
                    .annotate(is_running=Exists(Run.objects.open().filter(monitor=OuterRef("pk"))),
                              incident_open=Exists(Incident.objects.filter(
                                  monitor=OuterRef("pk"), resolved_at__isnull=True)),
                              last_duration=Subquery(last_run))
                    .order_by("project__name", "slug"))
        return HttpResponse(render(monitors, timezone.now()), content_type=CONTENT_TYPE)
