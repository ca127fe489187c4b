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
- ``cronradar_monitor_last_ping_timestamp_seconds``: Unix time of its last ping
  (absent before the first);
- ``cronradar_monitor_last_ping_age_seconds``: seconds since its last ping
  (absent before the first). Deprecated: use the timestamp above (``time() -
  cronradar_monitor_last_ping_timestamp_seconds``); removed in the next release;
- ``cronradar_monitor_last_run_duration_seconds``: the last finished run's
  duration (absent before one);
- ``cronradar_monitor_open_incidents``: 1 while an incident is open, else 0;
- ``cronradar_pings_dropped_total``: pings refused by the per-ping-URL rate limit.
"""
from django.db.models import Exists, F, OuterRef, Subquery
from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from rest_framework.views import APIView

from accounts import tenancy
from alerts.models import Incident
from monitors import slots
from monitors.api import STATUSES
from monitors.models import Monitor, Run

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
LABELS = ["project", "monitor", "name"]


class MonitorCollector:
    """A prometheus_client collector of the series of the module docstring for
    ``monitors`` (annotated as :class:`Metrics` does) at ``now``."""

    def __init__(self, monitors, now):
        self.monitors, self.now = monitors, now

    def collect(self):
        up = GaugeMetricFamily("cronradar_monitor_up", "0 while the monitor is down, else 1",
                               labels=LABELS)
        status = GaugeMetricFamily("cronradar_monitor_status",
                                   "1 for the monitor's current status",
                                   labels=[*LABELS, "status"])
        last_ping = GaugeMetricFamily("cronradar_monitor_last_ping_timestamp_seconds",
                                      "Unix time of the last ping", labels=LABELS)
        age = GaugeMetricFamily("cronradar_monitor_last_ping_age_seconds",
                                "seconds since the last ping (deprecated: use "
                                "cronradar_monitor_last_ping_timestamp_seconds)",
                                labels=LABELS)
        duration = GaugeMetricFamily("cronradar_monitor_last_run_duration_seconds",
                                     "the last finished run's duration", labels=LABELS)
        open_incidents = GaugeMetricFamily("cronradar_monitor_open_incidents",
                                           "1 while an incident is open", labels=LABELS)
        dropped = CounterMetricFamily("cronradar_pings_dropped",
                                      "pings refused by the ping rate limit", labels=LABELS)
        for m in self.monitors:
            labels = [m.project.name, m.slug, m.name]
            now_status = slots.status(m, self.now, running=m.is_running,
                                      incident_open=m.incident_open)
            up.add_metric(labels, 0 if now_status == "down" else 1)
            for s in STATUSES:
                status.add_metric([*labels, s], 1 if s == now_status else 0)
            if m.last_ping_at is not None:
                last_ping.add_metric(labels, m.last_ping_at.timestamp())
                age.add_metric(labels, max(0.0, (self.now - m.last_ping_at).total_seconds()))
            if m.last_duration is not None:
                duration.add_metric(labels, m.last_duration.total_seconds())
            open_incidents.add_metric(labels, 1 if m.incident_open else 0)
            dropped.add_metric(labels, m.dropped_pings)
        yield from (up, status, last_ping, age, duration, open_incidents, dropped)


def render(monitors, now) -> bytes:
    """The exposition text (format 0.0.4) for ``monitors`` (annotated as
    :class:`Metrics` does), from a fresh registry."""
    registry = CollectorRegistry()
    registry.register(MonitorCollector(monitors, now))
    return generate_latest(registry)


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
