"""Server-rendered SVG: a monitor's run durations (bars, oldest left), its
``max_runtime`` and ``min_runtime`` drawn as lines, failed runs marked. Plain
strings, no JavaScript; the chart has a text title and description for screen
readers, and each bar a ``<title>`` (shown on hover)."""
from __future__ import annotations

from datetime import timedelta
from html import escape

WIDTH, HEIGHT, PAD = 640, 160, 28
# Colours are classes (``run-<outcome>``, ``axis``, ``limit``, ``cross``) styled by
# dashboard.css with the theme's variables, so the chart follows dark mode.
OUTCOMES = {"succeeded", "failed", "stuck", "missed", "replaced", "running", "skipped"}


def durations_svg(runs, max_runtime: timedelta | None, min_runtime: timedelta | None,
                  label) -> str:
    """An SVG of ``runs`` (oldest first; each with ``duration`` (timedelta or None),
    ``outcome`` and ``started_at``). ``label(run)`` is the hover text of a bar.
    Runs without a duration (missed, no start) are a short grey tick."""
    seconds = [r.duration.total_seconds() for r in runs if r.duration is not None]
    limits = [x.total_seconds() for x in (max_runtime, min_runtime) if x]
    top = max([*seconds, *limits, 1.0]) * 1.1
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    step = inner_w / max(len(runs), 1)

    def y(value: float) -> float:
        return PAD + inner_h - inner_h * value / top

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'role="img" aria-labelledby="chart-title chart-desc" class="chart">',
             '<title id="chart-title">Run durations</title>',
             f'<desc id="chart-desc">{len(runs)} runs, oldest on the left; longest '
             f'{_fmt(max(seconds, default=0))}; failed runs in red with a cross.</desc>',
             f'<line x1="{PAD}" y1="{PAD + inner_h}" x2="{WIDTH - PAD}" y2="{PAD + inner_h}" '
             'class="axis"/>',
             f'<text x="4" y="{PAD + 4}" font-size="10">{_fmt(top / 1.1)}</text>']
    for i, run in enumerate(runs):
        x = PAD + i * step + step * 0.15
        w = max(step * 0.7, 1)
        css = f"run-{run.outcome if run.outcome in OUTCOMES else 'unknown'}"
        title = f"<title>{escape(label(run))}</title>"
        if run.duration is None:
            parts.append(f'<rect x="{x:.1f}" y="{PAD + inner_h - 3}" width="{w:.1f}" height="3" '
                         f'class="{css}">{title}</rect>')
            continue
        top_y = y(run.duration.total_seconds())
        parts.append(f'<rect x="{x:.1f}" y="{top_y:.1f}" width="{w:.1f}" '
                     f'height="{PAD + inner_h - top_y:.1f}" class="{css}">{title}</rect>')
        if run.outcome in ("failed", "stuck"):
            cx = x + w / 2
            parts.append(f'<text x="{cx:.1f}" y="{top_y - 3:.1f}" font-size="11" '
                         f'text-anchor="middle" class="cross">✕</text>')
    for value, name, dash in ((max_runtime, "max_runtime", "6 3"),
                              (min_runtime, "min_runtime", "2 3")):
        if value:
            ly = y(value.total_seconds())
            parts.append(f'<line x1="{PAD}" y1="{ly:.1f}" x2="{WIDTH - PAD}" y2="{ly:.1f}" '
                         f'class="limit" stroke-dasharray="{dash}"/>'
                         f'<text x="{WIDTH - PAD}" y="{ly - 3:.1f}" font-size="10" '
                         f'text-anchor="end" class="limit">{name} '
                         f'{_fmt(value.total_seconds())}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _fmt(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
