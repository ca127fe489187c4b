"""docker/grafana/cronradar.json: a Grafana dashboard over CronRadar's own
metrics, every query reading only metrics CronRadar exports."""
import json

from tests.docker.promql import SERIES, metric_names
from tests.live import ROOT

DASHBOARD = ROOT / "docker" / "grafana" / "cronradar.json"


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def exprs() -> dict[str, list[str]]:
    """Panel title -> its queries."""
    return {panel["title"]: [t["expr"] for t in panel["targets"]]
            for panel in dashboard()["panels"]}


def test_the_dashboard_has_the_panels_the_issue_asks_for():
    assert list(exprs()) == [
        "Pings per second by kind", "Ping latency", "Evaluator tick duration",
        "Evaluator lag and last tick", "Deliveries by status", "Delivery lag",
        "Delivery attempts by result", "Delivery latency by channel kind",
        "Channels failing", "Readiness", "Incidents opened by cause", "Scrape targets up"]
    queries = exprs()
    assert queries["Pings per second by kind"] == [
        "sum by (kind) (rate(cronradar_pings_total[$__rate_interval]))"]
    assert queries["Ping latency"] == [
        f"histogram_quantile({q}, sum by (le) "
        f"(rate(cronradar_ping_duration_seconds_bucket[$__rate_interval])))"
        for q in ("0.5", "0.95", "0.99")]
    assert queries["Delivery attempts by result"] == [
        "sum by (result) (rate(cronradar_delivery_attempts_total[$__rate_interval]))"]
    assert queries["Incidents opened by cause"] == [
        "sum by (cause) (increase(cronradar_incidents_opened_total[$__rate_interval]))"]


def test_every_metric_the_dashboard_reads_is_cronradars():
    used = set().union(*(metric_names(e) for queries in exprs().values() for e in queries))
    assert used - SERIES == set()
    # every metric of the contract is on it (the histograms through their buckets)
    assert {name.removesuffix("_bucket") for name in used} >= {
        "cronradar_pings_total", "cronradar_ping_duration_seconds",
        "cronradar_evaluator_tick_duration_seconds", "cronradar_evaluator_lag_seconds",
        "cronradar_evaluator_last_tick_timestamp_seconds", "cronradar_deliveries",
        "cronradar_deliveries_finished_total", "cronradar_delivery_lag_seconds",
        "cronradar_delivery_attempts_total", "cronradar_delivery_duration_seconds",
        "cronradar_channels_failing", "cronradar_incidents_opened_total", "cronradar_ready"}


def test_every_panel_uses_the_chosen_prometheus_and_has_a_place():
    board = dashboard()
    assert board["uid"] == "cronradar"
    variable = board["templating"]["list"][0]
    assert {k: variable[k] for k in ("name", "type", "query")} == {
        "name": "datasource", "type": "datasource", "query": "prometheus"}
    ids, cells = set(), set()
    for panel in board["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert all(t["datasource"] == panel["datasource"] for t in panel["targets"])
        assert [t["refId"] for t in panel["targets"]] == list("ABC"[:len(panel["targets"])])
        pos = panel["gridPos"]
        assert pos["x"] >= 0 and pos["x"] + pos["w"] <= 24
        cell = (pos["x"], pos["y"])
        assert cell not in cells  # no two panels on one another
        cells.add(cell)
        ids.add(panel["id"])
    assert len(ids) == len(board["panels"])
