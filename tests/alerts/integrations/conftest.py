"""What the integration tests share: a monitor in Berlin with a failed run, its
incident and events, an outage impact, links signed at a fixed time, and a local
receiver that quotes the URL in its error."""
import json
import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from alerts import links
from alerts.models import Channel, Incident, IncidentEvent
from monitors.models import Monitor, Ping, Run

SLOT = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
LAST_PING = datetime(2025, 1, 1, 12, 0, 4, tzinfo=UTC)
OPENED = datetime(2025, 1, 1, 12, 0, 5, tzinfo=UTC)
RESOLVED = datetime(2025, 1, 1, 12, 3, 0, tzinfo=UTC)
MONITOR_UUID = uuid.UUID("5a6b7c8d-1111-4222-8333-444455556666")
DEDUP = "1d1f4c1e-aaaa-4bbb-8ccc-dddddddddddd"
SECRET = "s3cret-hook-key"
BASE = "http://127.0.0.1:8000"  # CRONRADAR_BASE_URL in the tests
# the last ping's body ("x" * 600 + "backup failed: disk full") cut to its last 500
# characters, the cut marked
TAIL = "…" + ("x" * 600 + "backup failed: disk full")[-499:]
JSON_HEADERS = {"Content-Type": "application/json", "User-Agent": "CronRadar/0.1"}


@pytest.fixture(autouse=True)
def _links_signed_at_a_fixed_time(links_signed_at_a_fixed_time):
    """Every integration test: links signed at tests.alerts.conftest.SIGNED_AT."""


@pytest.fixture
def monitor(project):
    """A monitor in Berlin whose last run (slot 12:00 UTC) failed after 3 s."""
    m = Monitor.objects.create(
        project=project, name="Nightly backup", slug="nightly-backup", uuid=MONITOR_UUID,
        tags=["db", "prod"], kind="interval", period=timedelta(seconds=60),
        grace=timedelta(seconds=5), timezone="Europe/Berlin", last_ping_at=LAST_PING,
    )
    run = Run.objects.create(monitor=m, slot_at=SLOT, started_at=SLOT + timedelta(seconds=1),
                             ended_at=LAST_PING, outcome="failed", exit_status=2)
    Ping.objects.create(monitor=m, run=run, received_at=LAST_PING, kind="fail", method="POST",
                        body=b"x" * 600 + b"backup failed: disk full")
    return m


def context(incident):
    """The facts every incident notification of ``monitor`` carries."""
    return {
        "scheduled_at": "2025-01-01T13:00:00+01:00",
        "timezone": "Europe/Berlin",
        "last_ping_at": "2025-01-01T12:00:04Z",
        "run_duration": 3,
        "last_ping_body": TAIL,
        "links": {"acknowledge": links.make(incident.pk, "ack"),
                  "resolve": links.make(incident.pk, "resolve"),
                  "monitor": f"{BASE}/api/v1/monitors/{incident.monitor_id}/",
                  "monitor_page": f"{BASE}/monitors/{incident.monitor_id}/",
                  "incident": f"{BASE}/api/v1/incidents/{incident.pk}/",
                  "incident_page": f"{BASE}/incidents/{incident.pk}/"},
    }


def page_links(incident) -> list[tuple[str, str]]:
    """The links people are offered for ``incident``: no API URL."""
    return [("Acknowledge", links.make(incident.pk, "ack")),
            ("Resolve", links.make(incident.pk, "resolve")),
            ("Incident", f"{BASE}/incidents/{incident.pk}/"),
            ("Monitor", f"{BASE}/monitors/{incident.monitor_id}/")]


@pytest.fixture
def incident(monitor):
    return Incident.objects.create(
        monitor=monitor, cause="missed", summary="Nightly backup: no ping within 60s + 5s grace",
        dedup_key=DEDUP, opened_at=OPENED, missed_count=1,
    )


@pytest.fixture
def opened(incident):
    return IncidentEvent.objects.create(incident=incident, kind="opened", at=OPENED,
                                        message="no ping within 60s + 5s grace")


@pytest.fixture
def resolved(incident, opened):
    incident.resolved_at = RESOLVED
    incident.resolution = "ping received"
    incident.save()
    return IncidentEvent.objects.create(incident=incident, kind="resolved", at=RESOLVED,
                                        message="ping received")


def channel(project, kind, **config):
    return Channel.objects.create(project=project, kind=kind, config=config)


def canonical(document) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@pytest.fixture
def removed(incident, opened):
    return IncidentEvent.objects.create(incident=incident, kind="channel_removed", at=RESOLVED,
                                        detail={"channel": 1})


@pytest.fixture
def impact(project):
    from monitors.models import Outage, OutageImpact

    outage = Outage.objects.create(started_at=OPENED, ended_at=OPENED + timedelta(seconds=15),
                                   summarized_at=RESOLVED)
    return OutageImpact.objects.create(outage=outage, project=project, unknown_slots=6)


@pytest.fixture
def outage_notice(impact):
    """The ``outage.summary`` notice of ``impact`` (no delivery)."""
    from alerts import notices

    return notices.outage_summary(impact, [])


OUTAGE_TEXT = ("CronRadar could not receive pings from 2025-01-01T12:00:05Z to "
               "2025-01-01T12:00:20Z: 6 expected runs of project acme fell in that time and "
               "are recorded as unknown, not missed.")


@pytest.fixture
def event(project):
    m = Monitor.objects.create(project=project, name="Nightly backup", slug="nightly-backup",
                               tags=["db"], period=timedelta(60), grace=timedelta(seconds=5),
                               timezone="Europe/Berlin",
                               last_ping_at=SLOT + timedelta(seconds=4))
    Run.objects.create(monitor=m, slot_at=SLOT, started_at=SLOT + timedelta(seconds=1),
                       ended_at=SLOT + timedelta(seconds=4), outcome="failed")
    Ping.objects.create(monitor=m, received_at=SLOT + timedelta(seconds=4), kind="fail",
                        method="POST", body=b"disk full")
    incident = Incident.objects.create(monitor=m, cause="failed", summary="Nightly backup: run "
                                       "failed (exit status 2)", dedup_key=DEDUP,
                                       opened_at=OPENED, severity="error")
    return IncidentEvent.objects.create(incident=incident, kind="opened", at=OPENED)


def ack_link(event):
    return links.make(event.incident_id, "ack")


FACTS = [("Monitor", "Nightly backup (acme/nightly-backup)"), ("Cause", "failed"),
         ("Severity", "error"), ("Opened", "2025-01-01T13:00:05+01:00"),
         ("Scheduled", "2025-01-01T13:00:00+01:00"), ("Last ping", "2025-01-01T13:00:04+01:00"),
         ("Run took", "3s")]


# the facts of ``monitor``'s incident (``opened`` / ``resolved``: missed, critical)
MISSED_FACTS = [("Monitor", "Nightly backup (acme/nightly-backup)"), ("Cause", "missed"),
                ("Severity", "critical"), ("Opened", "2025-01-01T13:00:05+01:00"),
                ("Scheduled", "2025-01-01T13:00:00+01:00"),
                ("Last ping", "2025-01-01T13:00:04+01:00"), ("Run took", "3s")]


TEST_TEXT = ("This is a test notification from CronRadar to channel ops: all is well. Nothing "
             "is wrong with your monitors.")


@pytest.fixture
def test_notice(project):
    """(channel maker, the ``test`` notice of the channel it made): a channel named
    ``ops`` of ``kind`` and ``config``, and its stored test notice."""
    from alerts import notices

    def make(kind, **config):
        ch = Channel.objects.create(project=project, kind=kind, name="ops", config=config)
        return ch, notices.issue("test", project.pk, OPENED, {"channel": ch.pk}, [])
    return make


def channel_page(ch) -> str:
    return f"{BASE}/channels/{ch.pk}/"


BROKEN = {"id": 9, "name": "Ops hook", "kind": "webhook", "failing_since": "2025-01-01T12:00:05Z",
          "last_error": "HTTP 500: boom", "held": 3}  # the channel a channel.* notice is about
FAILING_TITLE = "Channel failing: Ops hook"
FAILING_TEXT = ("Notifications to Ops hook (webhook) have been failing since "
                "2025-01-01T12:00:05Z: HTTP 500: boom. 3 notifications are held and will be "
                "sent when it works again.")
RECOVERED_TEXT = ("Notifications to Ops hook (webhook) are delivered again; it had been failing "
                  "since 2025-01-01T12:00:05Z (last error: HTTP 500: boom). 3 notifications "
                  "still to send.")
BROKEN_FACTS = [("Channel", "Ops hook (webhook #9)"), ("Failing since", "2025-01-01T12:00:05Z"),
                ("Last error", "HTTP 500: boom"), ("Held", "3")]


@pytest.fixture
def failing(project):
    """A ``channel.failing`` notice (alerts.health) about :data:`BROKEN`, at RESOLVED."""
    return IncidentEvent.objects.create(kind="channel.failing", project=project, at=RESOLVED,
                                        detail={"channel": BROKEN})


@pytest.fixture
def recovered(project):
    return IncidentEvent.objects.create(kind="channel.recovered", project=project,
                                        at=RESOLVED, detail={"channel": BROKEN})
BROKEN_PAGE = f"{BASE}/channels/9/"  # the dashboard page of BROKEN


class Script:
    """An httpx.MockTransport handler answering from a script of responses; keeps
    each request as (method, URL, headers, body)."""

    def __init__(self, *answers):
        self.answers, self.requests = list(answers), []

    def __call__(self, request):
        self.requests.append((request.method, str(request.url), dict(request.headers),
                              request.content))
        return self.answers.pop(0)

    @property
    def transport(self):
        import httpx

        return httpx.MockTransport(self)


def deliver(event, ch):
    """A due delivery of ``event`` to ``ch`` (from ``event.at``)."""
    from alerts.models import Delivery

    return Delivery.objects.create(event=event, incident=event.incident, channel=ch,
                                   created_at=event.at, next_attempt_at=event.at)


def attempt(d, script, now):
    """Claim delivery ``d`` at ``now`` and make its attempt against ``script``;
    returns its status after it (``d`` refreshed)."""
    from alerts.delivery import claim_due, send

    [claim] = [c for c in claim_due(now, 100) if c.delivery_id == d.pk]
    send(claim, transport=script.transport, clock=lambda: now)
    d.refresh_from_db()
    return d.status


@pytest.fixture
def echo():
    """The base URL (``http://127.0.0.1:<port>``) of a local server that answers
    every POST ``500`` with ``no such path: <the request's path and query>``, as a
    receiver that quotes a request's URL in its error would."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            answer = f"no such path: {self.path}".encode()
            self.send_response(500)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def sent_for_real(d, now) -> list[str]:
    """Claim delivery ``d`` at ``now`` and make its attempt over the network (the
    shared transport); ``d`` refreshed. Returns every error it left: the delivery's
    ``last_error``, its attempt's ``error`` and its channel's ``last_error``."""
    from alerts.delivery import claim_due, send

    [claim] = [c for c in claim_due(now, 100) if c.delivery_id == d.pk]
    send(claim, clock=lambda: now)
    d.refresh_from_db()
    d.channel.refresh_from_db()
    return [d.last_error, *d.log.values_list("error", flat=True), d.channel.last_error]
