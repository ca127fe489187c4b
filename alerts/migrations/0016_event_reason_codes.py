"""Coded reasons: every event whose detail says why it was held back
(``suppressed``) or why a tier was notified (``reason``) gets that reason's code
under ``detail["code"]`` (alerts.reasons.Reason), so an incident held back before
this release is escalated with the right reason once its hold ends. The sentences
stay. Codes are written here as they are today (a migration does not import the
code that may change after it)."""
import re

from django.db import migrations
from django.db.models import Q

HELD = [(re.compile(r"maintenance window .* until .*", re.S), "maintenance"),
        (re.compile(r"the monitor is flapping"), "flapping")]
REASONS = [(re.compile(r"still open after the monitor stopped flapping"), "flapping_ended"),
           (re.compile(r"its maintenance window ended"), "maintenance_ended"),
           (re.compile(r"\d+s after the incident opened"), "tier_delay"),
           (re.compile(r"tier \d+ had no channel left to notify"), "no_channel"),
           (re.compile(r"every notification of tier \d+ failed"), "all_failed"),
           (re.compile(r"no channel of tier \d+ took the notification in time"), "not_taken"),
           (re.compile(r"not acknowledged after tier \d+"), "not_acknowledged")]


def _code(text, table):
    for pattern, code in table:
        if isinstance(text, str) and pattern.fullmatch(text):
            return code
    return None


def forward(apps, schema_editor):
    IncidentEvent = apps.get_model("alerts", "IncidentEvent")
    db = schema_editor.connection.alias
    found = (IncidentEvent.objects.using(db)
             .filter(Q(detail__has_key="suppressed") | Q(detail__has_key="reason"))
             .exclude(detail__has_key="code").order_by("pk"))
    changed = []
    for event in found.iterator(chunk_size=1000):
        code = (_code(event.detail.get("suppressed"), HELD)
                or _code(event.detail.get("reason"), REASONS))
        if code is not None:
            event.detail = {**event.detail, "code": code}
            changed.append(event)
        if len(changed) >= 500:
            IncidentEvent.objects.using(db).bulk_update(changed, ["detail"])
            changed = []
    IncidentEvent.objects.using(db).bulk_update(changed, ["detail"])


def backward(apps, schema_editor):
    IncidentEvent = apps.get_model("alerts", "IncidentEvent")
    db = schema_editor.connection.alias
    changed = []
    for event in (IncidentEvent.objects.using(db).filter(detail__has_key="code")
                  .order_by("pk").iterator(chunk_size=1000)):
        event.detail = {k: v for k, v in event.detail.items() if k != "code"}
        changed.append(event)
    IncidentEvent.objects.using(db).bulk_update(changed, ["detail"], batch_size=500)


class Migration(migrations.Migration):

    dependencies = [("alerts", "0015_project_in_accounts")]

    operations = [migrations.RunPython(forward, backward)]
