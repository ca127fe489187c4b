"""docker/prometheus/: the alerting rules (promtool check and unit tests), the
example scrape configuration, and that every metric they read is one of
CronRadar's (and, once the metrics are built, is in /metrics after real work)."""
import os
import shutil
import subprocess

import pytest
import yaml

from tests.docker.promql import SERIES, metric_names
from tests.live import ROOT

PROMETHEUS = ROOT / "docker" / "prometheus"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None and not os.environ.get("CRONRADAR_REQUIRE_PROMTOOL"),
    reason="promtool missing (apt-get install prometheus; .ci/run sets "
           "CRONRADAR_REQUIRE_PROMTOOL=1 and installs it)")


def promtool(*args, cwd=PROMETHEUS) -> subprocess.CompletedProcess:
    assert PROMTOOL, "CRONRADAR_REQUIRE_PROMTOOL is set and promtool is missing"
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=60)


def rules() -> list[dict]:
    groups = yaml.safe_load((PROMETHEUS / "rules.yml").read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


@needs_promtool
def test_promtool_checks_the_rules():
    out = promtool("check", "rules", "rules.yml")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS: 6 rules found" in out.stdout


@needs_promtool
def test_promtool_refuses_a_broken_rule(tmp_path):
    """The check above can fail: a rule with a PromQL syntax error does not pass."""
    broken = (PROMETHEUS / "rules.yml").read_text().replace(
        "max(cronradar_evaluator_lag_seconds) > 30", "max(cronradar_evaluator_lag_seconds > 30")
    (tmp_path / "rules.yml").write_text(broken)
    out = promtool("check", "rules", "rules.yml", cwd=tmp_path)
    assert out.returncode == 1 and "CronRadarEvaluatorLagging" not in out.stdout
    assert "parse error" in out.stdout + out.stderr


@needs_promtool
def test_each_alert_fires_on_synthetic_series():
    """rules_test.yml: every alert fires (with its exact labels and annotations)
    when its series cross the threshold long enough, and not before."""
    out = promtool("test", "rules", "rules_test.yml")
    assert out.returncode == 0, out.stdout + out.stderr
    tested = {case["alertname"]
              for test in yaml.safe_load((PROMETHEUS / "rules_test.yml").read_text())["tests"]
              for case in test["alert_rule_test"] if case["exp_alerts"]}
    assert tested == {rule["alert"] for rule in rules()}


@needs_promtool
def test_the_example_scrape_configuration_loads_with_the_rules(tmp_path):
    """prometheus.yml is a valid configuration (its token file put in place)."""
    token = tmp_path / "token"
    token.write_text("secret\n")
    config = (PROMETHEUS / "prometheus.yml").read_text()
    assert "/etc/prometheus/cronradar-metrics-token" in config
    (tmp_path / "prometheus.yml").write_text(
        config.replace("/etc/prometheus/cronradar-metrics-token", str(token)))
    shutil.copy(PROMETHEUS / "rules.yml", tmp_path)
    out = promtool("check", "config", "prometheus.yml", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS: 6 rules found" in out.stdout


def test_the_rules_cover_what_the_issue_asks():
    exprs = {rule["alert"]: rule["expr"] for rule in rules()}
    assert exprs == {
        "CronRadarEvaluatorLagging": "max(cronradar_evaluator_lag_seconds) > 30",
        "CronRadarEvaluatorStopped":
            "time() - max(cronradar_evaluator_last_tick_timestamp_seconds) > 60",
        "CronRadarDeliveriesBackingUp": "max(cronradar_delivery_lag_seconds) > 300",
        "CronRadarChannelsFailing": "max(cronradar_channels_failing) > 0",
        "CronRadarNotReady": "cronradar_ready == 0",
        "CronRadarTargetDown": 'up{job=~"cronradar.*"} == 0',
    }
    assert all(rule["labels"]["severity"] in {"page", "warning"} for rule in rules())


def test_every_metric_the_rules_read_is_cronradars():
    used = set().union(*(metric_names(rule["expr"]) for rule in rules()))
    assert used - SERIES == set()
    assert used == {"cronradar_evaluator_lag_seconds",
                    "cronradar_evaluator_last_tick_timestamp_seconds",
                    "cronradar_delivery_lag_seconds", "cronradar_channels_failing",
                    "cronradar_ready", "up"}


@pytest.mark.parametrize("expr, names", [
    ('sum by (kind) (rate(cronradar_pings_total{kind="start"}[$__rate_interval]))',
     {"cronradar_pings_total"}),
    ("histogram_quantile(0.99, sum by (le) (rate(cronradar_ping_duration_seconds_bucket[5m])))",
     {"cronradar_ping_duration_seconds_bucket"}),
    ('time() - max(cronradar_evaluator_last_tick) > 60 and on (job) up{a="b(c)"} == 1',
     {"cronradar_evaluator_last_tick", "up"}),
    ("rate(x_total[5m] offset 1h) / ignoring (kind) y", {"x_total", "y"}),
])
def test_metric_names_of_an_expression(expr, names):
    assert metric_names(expr) == names


def test_a_misspelt_metric_is_not_cronradars():
    assert metric_names("max(cronradar_evaluator_lag) > 30") - SERIES == {
        "cronradar_evaluator_lag"}
