"""The metric names of CronRadar's own metrics (the issue's contract), and the
metric names a PromQL expression reads: what the rules and dashboard tests check."""
import re

# Process metrics (core/metrics.py) and the gauges read at scrape
# (cronradar/selfmetrics.py, cronradar/health.py), exactly as the issue names them.
COUNTERS = {"cronradar_pings_total", "cronradar_incidents_opened_total",
            "cronradar_delivery_attempts_total", "cronradar_deliveries_finished_total"}
HISTOGRAMS = {"cronradar_ping_duration_seconds", "cronradar_evaluator_tick_duration_seconds",
              "cronradar_delivery_duration_seconds"}
GAUGES = {"cronradar_evaluator_lag_seconds", "cronradar_evaluator_last_tick_timestamp_seconds",
          "cronradar_deliveries", "cronradar_delivery_lag_seconds", "cronradar_channels_failing",
          "cronradar_ready"}
# the series Prometheus itself writes for every target
PROMETHEUS = {"up"}
SERIES = (COUNTERS | GAUGES | PROMETHEUS
          | {f"{h}{suffix}" for h in HISTOGRAMS for suffix in ("_bucket", "_sum", "_count")})

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
            "unless", "bool", "offset", "inf", "nan"}


def metric_names(expr: str) -> set[str]:
    """The metric names ``expr`` (PromQL) selects: identifiers that are not
    functions, keywords, label names or values, ranges or Grafana variables."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)                    # strings
    expr = re.sub(r"\{[^}]*\}", "", expr)                               # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)                              # ranges
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    expr = re.sub(r"\$\w+", "", expr)                                   # $__rate_interval
    names = set()
    for m in re.finditer(r"(?<![\w.])([a-zA-Z_:][\w:]*)", expr):
        following = expr[m.end():].lstrip()
        if following.startswith("(") or m.group(1).lower() in KEYWORDS:
            continue
        names.add(m.group(1))
    return names
