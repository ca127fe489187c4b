"""MERGER: run once the metrics branch is merged (it skips while
cronradar.selfmetrics has no exposition()). Every metric the alerting rules and
the Grafana dashboard read is in CronRadar's /metrics text after real work: pings
of each kind through the WSGI stack, an evaluator tick, a delivery."""
from datetime import timedelta

import pytest
from django.core.wsgi import get_wsgi_application
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from cronradar import selfmetrics
from cronradar.probes import Probes
from monitors import evaluator
from monitors.views import PingRoute
from tests.conftest import send_due
from tests.docker.promql import PROMETHEUS, metric_names
from tests.docker.test_grafana import exprs
from tests.docker.test_prometheus import rules
from tests.helpers import wsgi_call

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not hasattr(selfmetrics, "exposition"),
                       reason="MERGER: needs cronradar.selfmetrics.exposition() (metrics branch)"),
]


def test_every_metric_of_the_rules_and_dashboard_is_exported(
        make_monitor, hook, hook_http, django_capture_on_commit_callbacks):
    now = timezone.now()
    m = make_monitor(created=now, channels=[hook.pk])
    app = Probes(PingRoute(get_wsgi_application()))
    # incidents are counted on commit: run the callbacks the test's transaction holds
    with django_capture_on_commit_callbacks(execute=True):
        for path in ("/start", "", "/log", "/fail"):   # the fail opens an incident
            status = wsgi_call(app, f"/ping/{m.uuid}{path}", host="testserver")[0]
            assert status == "200 OK", path
        evaluator.tick(now + timedelta(seconds=60))
    assert send_due(now + timedelta(seconds=60)) >= 1
    assert hook_http.calls
    exported = {sample.name
                for family in text_string_to_metric_families(selfmetrics.exposition().decode())
                for sample in family.samples}
    used = set().union(*(metric_names(rule["expr"]) for rule in rules()),
                       *(metric_names(e) for queries in exprs().values() for e in queries))
    assert used - PROMETHEUS - exported == set()
