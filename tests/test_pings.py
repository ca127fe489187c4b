"""Ping endpoint and ingest: URL forms, stored fields, run pairing, idempotency."""
import io
import uuid
from datetime import timedelta

import pytest

from alerts.models import Incident
from monitors.models import Ping, Run
from monitors.pings import PingInput, ingest
from tests.conftest import T0

pytestmark = pytest.mark.django_db


def s(n):
    return timedelta(seconds=n)


@pytest.mark.parametrize("method", ["get", "head", "post"])
def test_success_ping_all_methods(client, make_monitor, method):
    m = make_monitor()
    resp = getattr(client, method)(f"/ping/{m.uuid}", HTTP_USER_AGENT="curl/8.5")
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("text/plain")
    p = Ping.objects.get(monitor=m)
    assert (p.kind, p.method, p.user_agent, p.remote_addr) == ("success", method.upper(),
                                                               "curl/8.5", "127.0.0.1")
    assert Run.objects.get(monitor=m).outcome == "succeeded"
    if method != "head":
        assert resp.content == b"OK\n"


@pytest.mark.parametrize("suffix,kind,code", [
    ("/start", "start", None), ("/fail", "fail", None), ("/log", "log", None),
    ("/0", "success", 0), ("/1", "fail", 1), ("/255", "fail", 255),
])
def test_uuid_and_slug_url_forms(client, make_monitor, suffix, kind, code):
    m = make_monitor(name="backup")
    assert client.get(f"/ping/{m.uuid}{suffix}").status_code == 200
    assert client.post(f"/ping/{m.project.ping_key}/backup{suffix}").status_code == 200
    pings = list(Ping.objects.filter(monitor=m).order_by("pk"))
    assert [(p.kind, p.exit_status) for p in pings] == [(kind, code), (kind, code)]


@pytest.mark.parametrize("path,status,message", [
    ("/ping/{uuid}/256", 400, b"exit status must be an integer from 0 to 255"),
    ("/ping/{uuid}/-1", 400, b"exit status must be an integer from 0 to 255"),
    ("/ping/{uuid}/99999999999999999999999", 400, b"exit status"),
    ("/ping/{uuid}/bogus", 400, b"unknown ping action 'bogus'"),
    ("/ping/{uuid}/a%00b", 400, b"NUL characters are not allowed in the URL"),
    ("/ping/{uuid}?rid=not-a-uuid", 400, b"rid must be a UUID"),
    ("/ping/{uuid}/start?rid=", 200, b"OK"),
    (f"/ping/{uuid.uuid4()}", 404, b"not found"),
    ("/ping/nokey/noslug", 404, b"not found"),
    ("/ping/{key}/no-such-slug/start", 404, b"not found"),
    ("/ping/a/b/c/d", 404, b"not found"),
    ("/ping/not-a-uuid", 404, b"not found"),
    ("/ping/%00%ff", 400, b"NUL characters are not allowed in the URL"),
])
def test_bad_input_gets_clear_4xx(client, make_monitor, path, status, message):
    m = make_monitor()
    resp = client.get(path.format(uuid=m.uuid, key=m.project.ping_key))
    assert resp.status_code == status
    assert message in resp.content
    assert Ping.objects.count() == (1 if status == 200 else 0)


def test_other_methods_405(client, make_monitor):
    m = make_monitor()
    resp = client.put(f"/ping/{m.uuid}")
    assert resp.status_code == 405 and resp["Allow"] == "GET, HEAD, POST"


def test_body_stored_and_truncated(client, make_monitor, settings):
    m = make_monitor()
    client.post(f"/ping/{m.uuid}/log", data=b"hello", content_type="text/plain")
    big = b"x" * (10 * 1024 * 1024)
    assert client.post(f"/ping/{m.uuid}/fail", data=big,
                       content_type="application/octet-stream").status_code == 200
    small, large = Ping.objects.order_by("pk")
    assert (bytes(small.body), small.body_size, small.body_truncated) == (b"hello", 5, False)
    assert len(bytes(large.body)) == settings.CRONRADAR_PING_BODY_LIMIT == 100 * 1024
    assert (large.body_size, large.body_truncated) == (10 * 1024 * 1024, True)


def test_chunked_body_without_length_is_read_from_the_server(client, make_monitor, settings):
    """``curl -X POST -T -`` sends a chunked body without Content-Length; Django reads
    no body then, so the view reads the server's de-chunked ``wsgi.input`` itself."""
    settings.CRONRADAR_PING_BODY_LIMIT = 4
    m = make_monitor()
    resp = client.generic("POST", f"/ping/{m.uuid}/log", HTTP_TRANSFER_ENCODING="chunked",
                          **{"wsgi.input": io.BytesIO(b"line 1\nline 2\n")})
    assert resp.status_code == 200
    ping = Ping.objects.get()
    assert (bytes(ping.body), ping.body_size, ping.body_truncated) == (b"line", 14, True)


def test_a_body_cut_short_of_its_length_is_refused_and_not_stored(client, make_monitor):
    """The client gave up mid-body (the server hands over what arrived): 400, nothing
    stored; it never gets that answer, and a retry sends the ping again."""
    m = make_monitor()
    resp = client.generic("POST", f"/ping/{m.uuid}/fail", CONTENT_LENGTH="1000",
                          **{"wsgi.input": io.BytesIO(b"abc")})
    assert (resp.status_code, resp.content) == (
        400, b"incomplete body: 3 of its 1000 bytes arrived; nothing was stored\n")
    assert not Ping.objects.exists()


def test_start_then_success_pairs_by_rid_and_records_run(make_monitor):
    m = make_monitor(max_runtime=s(60))
    a, b = uuid.uuid4(), uuid.uuid4()
    ingest(m.pk, PingInput("start", rid=a), T0 + s(3))
    ingest(m.pk, PingInput("start", rid=b), T0 + s(4))
    ingest(m.pk, PingInput("success", exit_status=0, rid=a), T0 + s(10))
    ra, rb = Run.objects.get(rid=a), Run.objects.get(rid=b)
    assert (ra.outcome, ra.started_at, ra.ended_at, ra.duration, ra.exit_status) == (
        "succeeded", T0 + s(3), T0 + s(10), s(7), 0)
    assert ra.slot_at == T0 + s(3)  # interval: the expected slot T0+3s
    assert ra.timeout_at == T0 + s(63)
    assert (rb.outcome, rb.ended_at) == ("running", None)


def test_end_without_rid_closes_most_recent_open_run(make_monitor):
    m = make_monitor()
    ingest(m.pk, PingInput("start"), T0 + s(1))
    ingest(m.pk, PingInput("start"), T0 + s(2))
    ingest(m.pk, PingInput("success"), T0 + s(5))
    runs = list(Run.objects.filter(monitor=m).order_by("started_at"))
    assert [(r.started_at, r.outcome) for r in runs] == [
        (T0 + s(1), "running"), (T0 + s(2), "succeeded")]
    # with nothing else open the next end ping closes the first run ...
    ingest(m.pk, PingInput("fail", exit_status=3), T0 + s(6))
    runs[0].refresh_from_db()
    assert (runs[0].outcome, runs[0].exit_status) == ("failed", 3)
    # ... and once nothing is open, an end ping records a run without a start
    ingest(m.pk, PingInput("success"), T0 + s(7))
    last = Run.objects.filter(monitor=m).latest("pk")
    assert (last.started_at, last.ended_at, last.outcome) == (None, T0 + s(7), "succeeded")


def test_duplicate_pings_with_same_rid_are_idempotent(make_monitor):
    m = make_monitor()
    rid = uuid.uuid4()
    for _ in range(3):
        ingest(m.pk, PingInput("start", rid=rid), T0 + s(1))
    for _ in range(3):
        ingest(m.pk, PingInput("fail", exit_status=2, rid=rid), T0 + s(2))
    assert Run.objects.filter(monitor=m).count() == 1
    assert Ping.objects.filter(monitor=m).count() == 6  # all stored ...
    assert Ping.objects.filter(monitor=m, duplicate=True).count() == 4  # ... 4 flagged
    inc = Incident.objects.get(monitor=m)
    assert (inc.cause, inc.failure_count) == ("failed", 1)


def test_log_ping_changes_no_state(make_monitor):
    m = make_monitor()
    ingest(m.pk, PingInput("log", body=b"progress 50%", body_size=12), T0 + s(1))
    m.refresh_from_db()
    assert m.last_ping_at is None and Run.objects.count() == 0
    assert bytes(Ping.objects.get().body) == b"progress 50%"


def test_concurrency_replace_closes_open_run(make_monitor):
    m = make_monitor(concurrency="replace", max_runtime=s(5))
    ingest(m.pk, PingInput("start"), T0 + s(1))
    ingest(m.pk, PingInput("start"), T0 + s(4))
    first, second = Run.objects.order_by("pk")
    assert (first.outcome, first.ended_at) == ("replaced", T0 + s(4))
    assert second.outcome == "running"
    assert not Incident.objects.exists()


def test_paused_monitor_stores_pings_without_alerts(make_monitor):
    m = make_monitor(paused=True)
    ingest(m.pk, PingInput("fail"), T0 + s(1))
    assert Ping.objects.filter(monitor=m).count() == 1
    assert Run.objects.get(monitor=m).outcome == "failed"
    assert not Incident.objects.exists()


def test_ping_is_stored_even_when_applying_it_fails(client, make_monitor, monkeypatch):
    m = make_monitor()

    def boom(*args):
        raise RuntimeError("schedule engine exploded")

    monkeypatch.setattr("monitors.slots.slot_for", boom)
    resp = client.post(f"/ping/{m.uuid}/start", data=b"x", content_type="text/plain")
    assert resp.status_code == 200
    p = Ping.objects.get(monitor=m)
    assert (p.kind, p.run, bytes(p.body)) == ("start", None, b"x")
    assert Run.objects.count() == 0  # the half-applied effect was rolled back
    m.refresh_from_db()
    assert m.evaluation_error == ("a ping's effects could not be applied: RuntimeError: "
                                  "schedule engine exploded")
    assert not Incident.objects.exists()  # a start is no failure


def test_a_failure_whose_run_cannot_be_recorded_still_raises_failed(client, make_monitor,
                                                                   monkeypatch):
    m = make_monitor()

    def boom(*args):
        raise RuntimeError("schedule engine exploded")

    monkeypatch.setattr("monitors.slots.slot_for", boom)
    assert client.get(f"/ping/{m.uuid}/3").status_code == 200
    assert Ping.objects.get(monitor=m).exit_status == 3
    incident = Incident.objects.get(monitor=m)
    assert (incident.cause, incident.summary) == (
        "failed", f"{m.name}: run failed (exit status 3); a ping's effects could not be "
                  "applied: RuntimeError: schedule engine exploded")


@pytest.mark.django_db(transaction=True)
def test_an_end_ping_whose_run_is_gone_when_written_is_stored_alone(make_monitor, monkeypatch):
    """The run an end ping closes disappears between reading and writing it (here
    deleted in the same transaction, so the rollback brings it back): the ping is
    stored alone, as when applying it fails (on PostgreSQL the run's update finds
    no row; on SQLite the ping's reference to it fails at commit)."""
    from monitors import pings

    m = make_monitor()
    rid = uuid.uuid4()
    ingest(m.pk, PingInput("start", rid=rid), T0)

    def then_delete(read):  # the runs are read with the lock on PostgreSQL, else alone
        def read_then_delete(*args, **kwargs):
            runs = read(*args, **kwargs)
            Run.objects.filter(monitor=m, rid=rid).delete()
            return runs
        return read_then_delete

    monkeypatch.setattr(pings, "pending_runs", then_delete(pings.pending_runs))
    monkeypatch.setattr(pings, "_lock_reading", then_delete(pings._lock_reading))
    ping = ingest(m.pk, PingInput("success", rid=rid), T0 + s(5))
    assert (ping.kind, ping.run) == ("success", None)
    assert Run.objects.get(monitor=m, rid=rid).outcome == "running"
    m.refresh_from_db()
    assert m.evaluation_error.startswith("a ping's effects could not be applied: ")


def test_late_cron_start_takes_over_missed_slot(make_monitor):
    from monitors import evaluator

    m = make_monitor(kind="cron", schedule="*/5 * * * *", grace=s(60), created=T0 - s(1))
    ingest(m.pk, PingInput("success"), T0 + s(2))  # slot T0
    evaluator.tick(T0 + s(360))  # slot T0+5min missed
    assert Run.objects.get(outcome="missed").slot_at == T0 + s(300)
    ingest(m.pk, PingInput("start"), T0 + s(400))  # late run for T0+5min
    run = Run.objects.get(slot_at=T0 + s(300))
    assert (run.outcome, run.started_at) == ("running", T0 + s(400))
    ingest(m.pk, PingInput("success"), T0 + s(410))
    assert Incident.objects.get(monitor=m).resolved_at == T0 + s(410)


@pytest.mark.parametrize("action", ["９", "٣", "1٣"])
def test_non_ascii_digits_are_not_exit_statuses(client, make_monitor, action):
    m = make_monitor()
    resp = client.get(f"/ping/{m.uuid}/{action}")
    assert resp.status_code == 400 and b"exit status must be an integer" in resp.content
    assert not Ping.objects.exists()


def _while_another_holds_the_lock(hold, then) -> None:
    """Run ``hold`` in a transaction of another thread (and connection) that keeps
    the locks it took for 0.5 s more, and ``then`` here meanwhile (it waits for
    them). PostgreSQL only: SQLite serializes whole transactions."""
    import threading
    import time

    from django.db import connection, connections, transaction

    if connection.vendor != "postgresql":
        pytest.skip("SQLite serializes whole transactions: nothing can open meanwhile")
    locked = threading.Event()

    def holder():
        try:
            with transaction.atomic():
                hold()
                locked.set()
                time.sleep(0.5)  # then() is waiting for the lock meanwhile
        finally:
            connections.close_all()

    thread = threading.Thread(target=holder)
    thread.start()
    assert locked.wait(10)
    then()
    thread.join(10)


@pytest.mark.django_db(transaction=True)
def test_a_ping_that_waited_for_the_lock_sees_the_incident_opened_meanwhile(make_monitor):
    """The evaluator holds the monitor's lock and opens an incident; a success ping
    arriving then waits for the lock and must resolve that incident (on PostgreSQL
    the statement that waited reads other tables as they were before it waited, so
    whether an incident is open is read after the lock)."""
    from monitors.models import Monitor

    monitor = make_monitor()
    opened_at = T0 + timedelta(minutes=2)

    def evaluator():
        list(Monitor.objects.select_for_update().filter(pk=monitor.pk))
        Incident.objects.create(monitor=monitor, cause="missed", summary="x: missed",
                                opened_at=opened_at, missed_count=1)

    _while_another_holds_the_lock(evaluator, lambda: ingest(
        monitor.pk, PingInput("success"), opened_at + timedelta(seconds=3)))
    incident = Incident.objects.get(monitor=monitor)
    assert (incident.resolved_at, incident.resolution) == (opened_at + timedelta(seconds=3),
                                                          "a run succeeded")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", ["success", "start"])
def test_a_ping_that_waited_for_the_lock_sees_the_run_opened_meanwhile(make_monitor, kind):
    """A start ping holds the monitor's lock while its run is written; a second ping
    waits for the lock. On PostgreSQL the statement that waited reads the runs as
    they were before it waited: the ping must still see the run (a success closes
    it; a start under concurrency "forbid" reports the overlap), not act as if no
    run were open."""
    m = make_monitor(concurrency="forbid")
    _while_another_holds_the_lock(lambda: ingest(m.pk, PingInput("start"), T0),
                                  lambda: ingest(m.pk, PingInput(kind), T0 + s(5)))
    runs = list(Run.objects.filter(monitor=m).order_by("pk")
                .values_list("outcome", "started_at", "ended_at"))
    if kind == "success":
        assert runs == [("succeeded", T0, T0 + s(5))]
    else:
        assert runs == [("running", T0, None), ("running", T0 + s(5), None)]
        assert Incident.objects.get(monitor=m).cause == "overlap"


@pytest.mark.django_db(transaction=True)
def test_a_migration_under_prepared_statements_costs_no_ping_its_effects(make_monitor):
    """On PostgreSQL the ping path's statements are prepared (core.sql). A
    migration that changes the type of a column they return makes PostgreSQL
    refuse them once: the ping is applied again, not stored alone."""
    from django.db import connection, connections

    if connection.vendor != "postgresql":
        pytest.skip("prepared statements: PostgreSQL only")
    m = make_monitor()
    for i in range(6):  # past prepare_threshold (5): the statements are prepared
        ingest(m.pk, PingInput("success"), T0 + s(3 * i))
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("ALTER TABLE monitors_monitor "
                           "ALTER COLUMN evaluation_error TYPE varchar(501)")
        ping = ingest(m.pk, PingInput("success"), T0 + s(18))
    finally:
        with other.cursor() as cursor:
            cursor.execute("ALTER TABLE monitors_monitor "
                           "ALTER COLUMN evaluation_error TYPE varchar(500)")
        other.close()
    assert ping.run.started_at is None and ping.run.ended_at == T0 + s(18)
    assert Run.objects.filter(monitor=m, outcome="succeeded").count() == 7
    m.refresh_from_db()
    assert m.evaluation_error == ""


@pytest.mark.parametrize("url", ["/ping/{key}/%00", "/ping/{key}/a%00b/fail", "/ping/%00/c1",
                                 "/ping/ab%00cd/c1/start", "/ping/{key}/c%00?create=1",
                                 "/ping/{uuid}?rid=%00", "/ping/{uuid}?x%00=1"])
def test_a_nul_in_a_ping_url_is_refused(client, make_monitor, url):
    """PostgreSQL text cannot hold NUL: 400 with a message, nothing stored, on both
    databases (it was a 500 on PostgreSQL)."""
    m = make_monitor(name="c1")
    resp = client.get(url.format(key=m.project.ping_key, uuid=m.uuid))
    assert (resp.status_code, resp.content) == (400, b"NUL characters are not allowed in "
                                                     b"the URL\n")
    assert not Ping.objects.exists()
