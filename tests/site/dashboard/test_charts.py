"""The run-duration chart (cronradar.dashboard.charts): its colours are classes that
dashboard.css styles with the theme's variables, so it is readable in dark mode."""
import re
from datetime import timedelta
from types import SimpleNamespace

from cronradar.dashboard.charts import durations_svg


def test_the_chart_has_classes_not_colours():
    runs = [SimpleNamespace(duration=s and timedelta(seconds=s), outcome=o, started_at=None)
            for s, o in ((30, "succeeded"), (60, "failed"), (None, "missed"), (10, "weird"))]
    svg = durations_svg(runs, timedelta(seconds=90), None, lambda r: r.outcome)
    assert not re.search(r'(fill|stroke)="#', svg)
    assert re.findall(r'<rect [^>]*class="([^"]+)"', svg) == [
        "run-succeeded", "run-failed", "run-missed", "run-unknown"]
    assert '<line x1="28" y1="132" x2="612" y2="132" class="axis"/>' in svg
    assert 'text-anchor="middle" class="cross">✕</text>' in svg
    assert 'class="limit" stroke-dasharray="6 3"/>' in svg
    assert 'text-anchor="end" class="limit">max_runtime 90 s</text>' in svg
