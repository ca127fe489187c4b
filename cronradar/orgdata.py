"""An organisation's data as a whole: its export and the purge after its deletion
(docs/multi-tenant.md, "Export and deletion"). Both read every floor, so they live
in the site; the accounts floor decides who may delete and announces it
(:data:`accounts.signals.organisation_deleted`, received here).

Deleting an organisation, step by step:

1. at once (:func:`on_organisation_deleted`, in the deleting transaction): every
   live monitor of it is hidden (``deleted_at`` set, ``next_evaluation_at`` NULL:
   its ping URLs answer 404 and store nothing, the evaluator no longer picks it);
2. the purge pass (:func:`purge_pass`, a step of the retention job: the
   ``monitors.signals.prune`` signal, every ``CRONRADAR_PRUNE_INTERVAL``, off
   the evaluator's tick): each hidden monitor gets the ``deleted`` detection
   deleting a monitor sends (its open incident resolves, "organisation
   deleted", and every notified channel is sent the resolve) and is handed to
   the evaluator, which removes it once those notifications are delivered or
   given up (``monitors.signals.purge_requested``);
3. the pass after the last monitor is gone and no notification to its channels is
   pending: every row left (projects, keys, channels, policies, windows, members,
   invitations, audit entries) is deleted. The installation-level audit entry of
   the deletion (organisation None) outlives it.

The state is the rows themselves (``Organisation.deleted_at``, indexed; the
monitors' ``next_evaluation_at``), so a crash at any step is resumed by the next
pass, and two passes at once (two processes) are safe: a monitor is handed over
under its row lock if it still waits, and the purge is one conditional delete.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import datetime

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.http import StreamingHttpResponse
from django.utils import timezone
from rest_framework.utils.encoders import JSONEncoder

from accounts import audit
from accounts import signals as account_signals
from accounts.api import OrganisationSerializer, ProjectSerializer
from accounts.models import AuditEntry, Organisation, Project
from alerts import api as alerts_api
from alerts.models import Channel, Delivery, EscalationPolicy, Incident, MaintenanceWindow
from monitors import detections
from monitors import signals as monitor_signals
from monitors.api import RunSerializer
from monitors.detections import Detection, Kind
from monitors.models import Monitor, Run

log = logging.getLogger(__name__)
FORMAT, VERSION = "cronradar-organisation", 1
CHUNK = 500  # rows serialized at a time: an export's memory is bounded by it
RETIRE_BATCH = 2000  # hidden monitors handed over per organisation per pass


# --- export --------------------------------------------------------------------------------

def export(organisation: Organisation, request, now: datetime) -> Iterator[str]:
    """The organisation's archive as JSON text, in pieces (for a streamed answer):
    ``format``, ``version``, ``exported_at``, ``organisation``, then the lists
    ``projects``, ``monitors``, ``channels`` (credentials masked as for a reader of
    the API), ``escalation_policies``, ``maintenance_windows``, ``runs`` (each with
    its ``monitor``) and ``incidents`` (with their events and each notification's
    outcome): every object as the API shows it to ``request``'s caller (an owner),
    of the monitors not deleted, and the runs and incidents retention keeps.
    Reads :data:`CHUNK` rows at a time."""
    context = {"request": request}
    projects = Project.objects.filter(organisation=organisation)
    monitors = Monitor.objects.filter(project__in=projects, deleted_at__isnull=True)
    head = {"format": FORMAT, "version": VERSION, "exported_at": now,
            "organisation": OrganisationSerializer(organisation, context=context).data}
    yield _dumps(head)[:-1]
    sections = [
        ("projects", projects, lambda rows: ProjectSerializer(rows, many=True,
                                                              context=context).data),
        ("monitors", _monitors(monitors), lambda rows: alerts_api.MonitorSerializer(
            rows, many=True, context=context).data),
        ("channels", Channel.objects.filter(project__in=projects, deleted_at__isnull=True)
         .select_related("project"), lambda rows: [_channel(c, context) for c in rows]),
        ("escalation_policies", EscalationPolicy.objects.filter(project__in=projects)
         .prefetch_related(*alerts_api.POLICY_PREFETCH),
         lambda rows: alerts_api.EscalationPolicySerializer(rows, many=True,
                                                            context=context).data),
        ("maintenance_windows", MaintenanceWindow.objects.filter(project__in=projects),
         lambda rows: alerts_api.MaintenanceWindowSerializer(rows, many=True,
                                                            context=context).data),
        ("runs", Run.objects.filter(monitor__in=monitors),
         lambda rows: [{"monitor": r.monitor_id, **RunSerializer(r).data} for r in rows]),
        ("incidents", alerts_api._incidents(Incident.objects.filter(monitor__in=monitors)),
         lambda rows: alerts_api.IncidentSerializer(rows, many=True, context=context).data),
    ]
    for name, queryset, serialize in sections:
        yield f', "{name}": ['
        first = True
        for rows in _chunks(queryset):
            for item in serialize(rows):
                yield ("" if first else ", ") + _dumps(item)
                first = False
        yield "]"
    yield "}\n"


def _monitors(queryset):
    """Monitors annotated as the API's list reads them."""
    open_run = Run.objects.open().filter(monitor=OuterRef("pk"))
    open_incident = Incident.objects.filter(monitor=OuterRef("pk"), resolved_at__isnull=True)
    return (queryset.select_related("project", "alerting")
            .prefetch_related("alerting__channels")
            .annotate(is_running=Exists(open_run), has_open_incident=Exists(open_incident)))


def _channel(channel: Channel, context: dict) -> dict:
    data = alerts_api.ChannelSerializer(channel, context=context).data
    return {**data, "config": alerts_api.masked_config(data["config"])}


def _chunks(queryset):
    """``queryset`` in id order, :data:`CHUNK` rows at a time (keyset: each chunk
    one indexed range read, its prefetches per chunk)."""
    last = 0
    while True:
        rows = list(queryset.filter(pk__gt=last).order_by("pk")[:CHUNK])
        if not rows:
            return
        yield rows
        last = rows[-1].pk


def _dumps(value) -> str:
    return json.dumps(value, cls=JSONEncoder, ensure_ascii=False)


def download(organisation: Organisation, request) -> StreamingHttpResponse:
    """The export as an answer (for the API and the dashboard): the archive
    streamed as ``application/json``, an attachment named by :func:`filename`;
    the export is recorded in the audit log first. A HEAD (the headers, no archive)
    is not an export: nothing recorded, nothing read."""
    now = timezone.now()
    head = request.method == "HEAD"
    if not head:
        audit.record(AuditEntry.Action.EXPORT, organisation, target=organisation)
    response = StreamingHttpResponse(iter(()) if head else export(organisation, request, now),
                                     content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{filename(organisation, now)}"'
    return response


def filename(organisation: Organisation, now: datetime) -> str:
    """``cronradar-<org>-<date>.json``, the organisation's name made safe for a
    header (letters, digits, ``-`` and ``_``; anything else ``-``)."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "-"
                   for c in organisation.name)
    return f"cronradar-{safe}-{now:%Y-%m-%d}.json"


# --- deletion ------------------------------------------------------------------------------

def on_organisation_deleted(sender, organisation: Organisation, now: datetime,
                            **kwargs) -> None:
    """accounts.signals.organisation_deleted receiver: hide its monitors at once
    (one UPDATE: their pings 404 and are not stored, the evaluator skips them)."""
    Monitor.objects.filter(project__organisation=organisation, deleted_at__isnull=True) \
        .update(deleted_at=now, next_evaluation_at=None)


def on_account_deleting(sender, user, organisation: Organisation, **kwargs) -> bool:
    """accounts.signals.account_deleting receiver: whether ``organisation`` still
    has monitors (its last owner may then not leave)."""
    return Monitor.objects.filter(project__organisation=organisation,
                                  deleted_at__isnull=True).exists()


def on_prune(sender, now: datetime, **kwargs) -> None:
    """monitors.signals.prune receiver (the retention job): :func:`purge_pass`.
    Returns None: the prune command adds its receivers' answers up as incidents."""
    purge_pass(now)


def purge_pass(now: datetime) -> int:
    """One step for each deleted organisation (oldest first): hand its hidden
    monitors to the evaluator with their resolves (:data:`RETIRE_BATCH` at a time),
    or, once none is left and nothing is pending on its channels, delete its rows.
    Returns how many organisations were purged."""
    purged = 0
    # the organisation_deleted partial index: only deleted organisations are read
    for org in Organisation.objects.filter(deleted_at__isnull=False).order_by("deleted_at"):
        if _retire(org, now):
            continue
        if Monitor.objects.filter(project__organisation=org).exists() or \
                Delivery.objects.filter(channel__project__organisation=org,
                                        status__in=Delivery.ACTIVE).exists():
            continue  # the evaluator removes them once their notifications are done
        _purge(org)
        purged += 1
    return purged


def _retire(org: Organisation, now: datetime) -> int:
    """Send the ``deleted`` detection of up to :data:`RETIRE_BATCH` hidden monitors
    of ``org`` and make them due, so the evaluator removes them; returns how many."""
    hidden = list(Monitor.objects.filter(project__organisation=org, deleted_at__isnull=False,
                                         next_evaluation_at__isnull=True)
                  .values_list("pk", flat=True)[:RETIRE_BATCH])
    for pk in hidden:
        with transaction.atomic():  # the row lock, as the ping path and edits take it
            monitor = Monitor.objects.select_for_update().filter(
                pk=pk, next_evaluation_at__isnull=True).first()
            if monitor is None:
                continue  # another pass had it
            detections.emit(monitor, [Detection(Kind.DELETED, now, "organisation deleted")])
            monitor.next_evaluation_at = now
            monitor.save(update_fields=["next_evaluation_at"])
    return len(hidden)


def _purge(org: Organisation) -> None:
    """Delete what is left of ``org``: its audit entries, then the organisation
    (cascading to its members, invitations, projects, keys, channels, policies,
    windows and notices)."""
    with transaction.atomic():
        AuditEntry.objects.filter(organisation=org).delete()
        Organisation.objects.filter(pk=org.pk, deleted_at__isnull=False).delete()
    log.warning("organisation %s (id %s) purged: its resolves were sent", org.name, org.pk)


def connect() -> None:
    """Connect the receivers (``CronRadarConfig.ready``)."""
    account_signals.organisation_deleted.connect(on_organisation_deleted,
                                                 dispatch_uid="cronradar-orgdata-deleted")
    account_signals.account_deleting.connect(on_account_deleting,
                                             dispatch_uid="cronradar-orgdata-account")
    monitor_signals.prune.connect(on_prune, dispatch_uid="cronradar-orgdata-purge")
