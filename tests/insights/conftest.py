"""Helpers the insights tests share: a fixed run history, the policy model's output."""
from __future__ import annotations

import io

from django.core.management import call_command

from monitors.models import Run
from tests.conftest import DATA, s
from tests.helpers import slot


def history(monitor) -> dict[str, Run]:
    """Twelve runs of ``monitor``, one or two per hourly slot, created in this order
    (ids ascending). Durations 60 120 90 45 3600 50 60 s; late starts 5 10 30 -2 0
    20 30 1 61 3 s; overlaps G (F open), J (I ended as J started: replaced), K (J open)."""
    rows = {
        "A": (slot(0), s(5), s(65), "succeeded", 0),
        "B": (slot(1), s(10), s(130), "failed", 1),
        "C": (slot(2), None, s(30), "succeeded", None),  # pinged only at its end
        "D": (slot(3), None, None, "missed", None),
        "E": (slot(4), s(-2), s(88), "failed", 1),  # its host's clock runs 2 s fast
        "F": (slot(5), s(0.5), s(45.9), "succeeded", 0),  # 45.4 s: 45; 0.5 s late: 0
        "G": (slot(5), s(20), s(3620), "failed", 2),  # a retry while F ran
        "H": (slot(6), s(30), s(80), "failed", None),  # a /fail ping: no exit status
        "I": (slot(7), s(1), s(61), "replaced", None),
        "J": (slot(7), s(61), None, "stuck", None),
        "K": (slot(8), s(3), None, "running", None),
        "L": (slot(9), None, None, "unknown", None),
    }
    made = {}
    for name, (at, start, end, outcome, status) in rows.items():
        made[name] = Run.objects.create(
            monitor=monitor, slot_at=at, started_at=at + start if start is not None else None,
            ended_at=at + end if end is not None else None, outcome=outcome, exit_status=status)
    return made


EXPECTED = DATA / "policymodel_seed_20260813.txt"


def command_output(*args: str) -> str:
    out = io.StringIO()
    call_command("policymodel", *args, stdout=out)
    return out.getvalue()
