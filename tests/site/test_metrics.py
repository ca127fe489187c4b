"""cronradar.metrics: GET /api/v1/metrics/ in the Prometheus text format."""
import pytest
from django.utils import timezone

from accounts.models import ApiKey
from monitors.models import Monitor
from monitors.pings import PingInput, ingest
from tests.conftest import T0, S, new_project

pytestmark = pytest.mark.django_db


def test_prometheus_metrics(api, project, make_monitor, settings, monkeypatch):
    now = T0 + 600 * S
    monkeypatch.setattr(timezone, "now", lambda: now)
    a = make_monitor(name="backup", period=3600 * S, grace=60 * S)
    make_monitor(name='we"ird', period=3600 * S, grace=60 * S)
    ingest(a.pk, PingInput("start"), T0)
    ingest(a.pk, PingInput("fail"), T0 + 42 * S)
    Monitor.objects.filter(pk=a.pk).update(dropped_pings=3)
    resp = api.get("/api/v1/metrics/")
    assert resp["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    text = resp.content.decode()
    labels = 'monitor="backup",name="backup",project="acme"'  # sorted by prometheus_client
    odd = 'monitor="we\\"ird",name="we\\"ird",project="acme"'
    for line in [f"cronradar_monitor_up{{{labels}}} 0.0",
                 f'cronradar_monitor_status{{{labels},status="down"}} 1.0',
                 f'cronradar_monitor_status{{{labels},status="up"}} 0.0',
                 f"cronradar_monitor_last_ping_timestamp_seconds{{{labels}}} 1.767614442e+09",
                 f"cronradar_monitor_last_ping_age_seconds{{{labels}}} 558.0",
                 f"cronradar_monitor_last_run_duration_seconds{{{labels}}} 42.0",
                 f"cronradar_monitor_open_incidents{{{labels}}} 1.0",
                 f"cronradar_pings_dropped_total{{{labels}}} 3.0",
                 f"cronradar_monitor_up{{{odd}}} 1.0",
                 f'cronradar_monitor_status{{{odd},status="new"}} 1.0',
                 "# TYPE cronradar_pings_dropped_total counter",
                 "# HELP cronradar_monitor_last_ping_age_seconds seconds since the last ping "
                 "(deprecated: use cronradar_monitor_last_ping_timestamp_seconds)"]:
        assert line in text.splitlines(), line
    assert "cronradar_monitor_last_ping_age_seconds{" + odd not in text  # never pinged
    assert "cronradar_monitor_last_ping_timestamp_seconds{" + odd not in text
    ro = ApiKey.issue(project, read_only=True)[1]
    from tests.helpers import as_key

    assert as_key(ro).get("/api/v1/metrics/").status_code == 200
    assert "backup" not in as_key(ApiKey.issue(new_project("b"))[1]).get(
        "/api/v1/metrics/").content.decode()
    assert api.credentials() is None and api.get("/api/v1/metrics/").status_code == 401
