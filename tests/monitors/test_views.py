"""The ping endpoint (monitors.views): URL forms, methods, bodies, bad input, the
client's address, and the database being down (rate limits: test_ratelimit.py)."""
import io
import uuid
from datetime import UTC, datetime

import pytest
from django.db import OperationalError

from monitors import views
from monitors.models import Monitor, PingLog, Run
from tests.conftest import S

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("method", ["get", "head", "post"])
def test_success_ping_all_methods(client, make_monitor, method):
    m = make_monitor()
    resp = getattr(client, method)(f"/ping/{m.uuid}", HTTP_USER_AGENT="curl/8.5")
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("text/plain")
    p = PingLog.objects.get(monitor=m)
    assert (p.kind, p.method, p.user_agent, p.remote_addr) == ("success", method.upper(),
                                                               "curl/8.5", "127.0.0.1")
    assert Run.objects.get(monitor=m).outcome == "succeeded"
    if method != "head":
        assert resp.content == b"OK\n"


@pytest.mark.parametrize("method", ["get", "head"])
def test_a_post_only_monitor_refuses_get_and_head_pings_with_a_405(client, make_monitor,
                                                                  method):
    m = make_monitor(name="backup", methods="POST")
    for path in (f"/ping/{m.uuid}", f"/ping/{m.project.ping_key}/backup/start",
                 f"/ping/{m.uuid}/log"):
        resp = getattr(client, method)(path)
        assert (resp.status_code, resp["Allow"]) == (405, "POST")
    if method == "get":
        assert resp.content == (b"method not allowed: this monitor takes POST pings only (its "
                                b"methods is POST), not GET; nothing was stored\n")
    assert not PingLog.objects.exists()
    assert client.post(f"/ping/{m.uuid}").status_code == 200


@pytest.mark.parametrize("suffix,kind,code", [
    ("/start", "start", None), ("/fail", "fail", None), ("/log", "log", None),
    ("/0", "success", 0), ("/1", "fail", 1), ("/255", "fail", 255),
])
def test_uuid_and_slug_url_forms(client, make_monitor, suffix, kind, code):
    m = make_monitor(name="backup")
    assert client.get(f"/ping/{m.uuid}{suffix}").status_code == 200
    assert client.post(f"/ping/{m.project.ping_key}/backup{suffix}").status_code == 200
    pings = list(PingLog.objects.filter(monitor=m).order_by("pk"))
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
    assert PingLog.objects.count() == (1 if status == 200 else 0)


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
    small, large = PingLog.objects.order_by("pk")
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
    ping = PingLog.objects.get()
    assert (bytes(ping.body), ping.body_size, ping.body_truncated) == (b"line", 14, True)


def test_a_body_cut_short_of_its_length_is_refused_and_not_stored(client, make_monitor):
    """The client gave up mid-body (the server hands over what arrived): 400, nothing
    stored; it never gets that answer, and a retry sends the ping again."""
    m = make_monitor()
    resp = client.generic("POST", f"/ping/{m.uuid}/fail", CONTENT_LENGTH="1000",
                          **{"wsgi.input": io.BytesIO(b"abc")})
    assert (resp.status_code, resp.content) == (
        400, b"incomplete body: 3 of its 1000 bytes arrived; nothing was stored\n")
    assert not PingLog.objects.exists()


@pytest.mark.parametrize("action", ["９", "٣", "1٣"])
def test_non_ascii_digits_are_not_exit_statuses(client, make_monitor, action):
    m = make_monitor()
    resp = client.get(f"/ping/{m.uuid}/{action}")
    assert resp.status_code == 400 and b"exit status must be an integer" in resp.content
    assert not PingLog.objects.exists()


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
    assert not PingLog.objects.exists()


def test_pings_answer_503_with_retry_after_while_the_database_is_down(client, make_monitor,
                                                                       monkeypatch):
    m = make_monitor()

    def down(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(views.pings, "ingest_at", down)
    resp = client.get(f"/ping/{m.uuid}")
    assert (resp.status_code, resp["Retry-After"], resp.content) == (
        503, "5", b"database unavailable, nothing was stored: retry in 5 seconds\n")


@pytest.mark.parametrize("trust,forwarded,stored", [
    (False, "203.0.113.9", "127.0.0.1"),
    (True, "198.51.100.1, 203.0.113.9", "203.0.113.9"),  # the address nginx saw
    (True, "not-an-address", "127.0.0.1"),
    (True, "", "127.0.0.1"),
])
def test_client_address_behind_a_trusted_proxy(client, make_monitor, settings, trust, forwarded,
                                               stored):
    settings.CRONRADAR_TRUST_X_FORWARDED_FOR = trust
    m = make_monitor()
    assert client.get(f"/ping/{m.uuid}", HTTP_X_FORWARDED_FOR=forwarded).status_code == 200
    assert PingLog.objects.get(monitor=m).remote_addr == stored


# --- ?slot= ------------------------------------------------------------------------------

@pytest.mark.parametrize("raw,slot", [
    ("1767614400", "2026-01-05T12:00:00+00:00"),
    ("2026-01-05T12:00:00Z", "2026-01-05T12:00:00+00:00"),
    ("2026-01-05t12:00:00z", "2026-01-05T12:00:00+00:00"),
    ("2026-01-05T13:00:00+01:00", "2026-01-05T12:00:00+00:00"),
    ("2026-01-05T13:00:00 01:00", "2026-01-05T12:00:00+00:00"),  # an unescaped + decoded
    ("2026-01-05 07:00:00.000-05:00", "2026-01-05T12:00:00+00:00"),
])
def test_parse_slot(raw, slot):
    assert views.parse_slot(raw).isoformat() == slot


@pytest.mark.parametrize("raw", ["", "soon", "2026-01-05T12:00:00", "2026-01-05",
                                 "2026-01-05T12:00:00+24:00", "2026-13-05T12:00:00Z",
                                 "-1767614400", "1767614400.5", "0001-01-01T00:00:00+01:00",
                                 "123456789012"])
def test_parse_slot_refuses(raw):
    with pytest.raises(ValueError) as err:
        views.parse_slot(raw)
    assert str(err.value) == (f"{views.SLOT_FORMAT}, got '{raw}'")


@pytest.fixture
def ping_clock(monkeypatch):
    """The ping view's clock, stopped at T0 + 30 s."""
    from types import SimpleNamespace

    from tests.conftest import T0

    monkeypatch.setattr(views, "timezone", SimpleNamespace(now=lambda: T0 + 30 * S))
    return T0


@pytest.mark.parametrize("suffix", ["/start", "", "/fail", "/0", "/3"])
def test_every_ping_url_form_takes_a_slot(client, make_monitor, ping_clock, suffix):
    m = make_monitor(name="backup", kind="cron", schedule="*/5 * * * *", grace=600 * S,
                     created=ping_clock - 60 * S)
    assert client.get(f"/ping/{m.uuid}{suffix}?slot=2026-01-05T11:55:00Z").status_code == 200
    assert client.post(f"/ping/{m.project.ping_key}/backup{suffix}?slot=1767614400"
                       ).status_code == 200
    assert sorted(Run.objects.values_list("slot_at", flat=True)) == [
        ping_clock - 300 * S, ping_clock]


@pytest.mark.parametrize("query,message", [
    ("slot=noon", f"{views.SLOT_FORMAT}, got 'noon'\n"),
    ("slot=2026-01-05T12:01:00%2B00:00",
     "slot 2026-01-05T12:01:00Z is not a fire time of '*/5 * * * *' (UTC); the nearest "
     "are 2026-01-05T12:00:00Z and 2026-01-05T12:05:00Z; nothing was stored\n"),
    ("slot=2026-01-05T12:05:00Z", "slot 2026-01-05T12:05:00Z is in the future: at most 60 "
                                  "seconds after now (2026-01-05T12:00:30Z); nothing was stored\n"),
])
def test_a_bad_slot_is_a_400_and_nothing_is_stored(client, make_monitor, ping_clock,
                                                     query, message):
    m = make_monitor(kind="cron", schedule="*/5 * * * *", grace=600 * S,
                     created=ping_clock - 60 * S)
    for suffix in ("/start", ""):
        resp = client.get(f"/ping/{m.uuid}{suffix}?{query}")
        assert (resp.status_code, resp.content.decode()) == (400, message)
    assert not PingLog.objects.exists() and not Run.objects.exists()


def test_an_interval_monitor_refuses_a_slot(client, make_monitor, ping_clock):
    m = make_monitor(period=60 * S)
    resp = client.get(f"/ping/{m.uuid}?slot=1767614400")
    assert (resp.status_code, resp.content) == (
        400, b"slot: an interval monitor has no fire times to name; leave slot out; "
             b"nothing was stored\n")


def test_a_refused_slot_makes_no_monitor_on_create(client, project, ping_clock):
    """``?create=1`` with a slot the new monitor cannot have: the 400 says nothing
    was stored, and no monitor was made either."""
    base = f"/ping/{project.ping_key}"
    interval = client.get(f"{base}/newone?create=1&slot=1767614400")
    assert (interval.status_code, interval.content) == (
        400, b"slot: an interval monitor has no fire times to name; leave slot out; "
             b"nothing was stored\n")
    cron = client.get(f"{base}/newtwo?create=1&schedule=*/5+*+*+*+*&slot=1767614460")
    assert cron.status_code == 400
    assert cron.content.decode().startswith("slot 2026-01-05T12:01:00Z is not a fire time")
    assert not Monitor.objects.filter(slug__in=["newone", "newtwo"]).exists()
    made = client.get(f"{base}/newtwo?create=1&schedule=*/5+*+*+*+*&slot=1767614400")
    assert made.status_code == 201
    assert list(Run.objects.filter(monitor__slug="newtwo").values_list("slot_at", flat=True)) == [
        datetime(2026, 1, 5, 12, 0, tzinfo=UTC)]


HC_PING = "hc-ping.com"


@pytest.mark.parametrize("suffix,kind,code", [
    ("", "success", None), ("/start", "start", None), ("/fail", "fail", None),
    ("/log", "log", None), ("/0", "success", 0), ("/3", "fail", 3)])
def test_the_ping_host_answers_pings_at_the_root_path(client, make_monitor, settings, suffix,
                                                      kind, code):
    """CRONRADAR_PING_HOST: hc-ping.com's URLs (/<uuid>..., /<ping key>/<slug>...) as
    /ping/...; a port, a final dot and the case of the Host header do not matter."""
    settings.CRONRADAR_PING_HOST = HC_PING
    m = make_monitor(name="backup")
    assert client.get(f"/{m.uuid}{suffix}", HTTP_HOST="HC-Ping.com.").content == b"OK\n"
    assert client.post(f"/{m.project.ping_key}/backup{suffix}?rid={uuid.uuid4()}",
                       HTTP_HOST="hc-ping.com:443").status_code == 200
    assert client.get(f"/ping/{m.uuid}{suffix}", HTTP_HOST=HC_PING).status_code == 200
    pings = list(PingLog.objects.filter(monitor=m).order_by("pk"))
    assert [(p.kind, p.exit_status) for p in pings] == [(kind, code)] * 3


def test_the_ping_host_answers_nothing_but_pings_and_other_hosts_are_unchanged(
        client, make_monitor, settings):
    settings.CRONRADAR_PING_HOST = HC_PING
    m = make_monitor()
    resp = client.get("/", HTTP_HOST=HC_PING)
    assert (resp.status_code, resp.content) == (
        404, b"not found: use /<uuid>[/action] or /<ping key>/<slug>[/action]\n")
    resp = client.get("/api/v1/", HTTP_HOST=HC_PING)  # a ping key "api" and a slug "v1"
    assert (resp.status_code, resp.content) == (404, b"not found: no monitor with this ping URL\n")
    assert client.get(f"/{m.uuid}/bogus", HTTP_HOST=HC_PING).status_code == 400
    assert client.get(f"/{m.uuid}").status_code == 404  # the dashboard's host: no such page
    assert client.get("/api/v1/schema/").status_code == 200
    settings.CRONRADAR_PING_HOST = ""
    assert client.get(f"/{m.uuid}", HTTP_HOST=HC_PING).status_code == 404
    assert not PingLog.objects.exists()


def test_the_ping_route_answers_the_ping_host_ahead_of_django(make_monitor, settings):
    from monitors.views import PingRoute

    settings.CRONRADAR_PING_HOST = HC_PING
    m = make_monitor()
    seen, passed = {}, []
    route = PingRoute(lambda environ, start: passed.append(environ["PATH_INFO"]) or [b"django"])

    def call(path, host, method="GET"):
        environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "",
                   "SERVER_NAME": "cronradar", "SERVER_PORT": "80", "HTTP_HOST": host,
                   "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(b""),
                   "REMOTE_ADDR": "192.0.2.7"}
        return b"".join(route(environ, lambda status, headers: seen.update(status=status)))

    assert (call(f"/{m.uuid}/start", HC_PING), seen["status"]) == (b"OK\n", "200 OK")
    assert call(f"/{m.uuid}/start", HC_PING, "HEAD") == b""
    assert call("/", HC_PING) == b"not found: use /<uuid>[/action] or /<ping key>/<slug>[/action]\n"
    assert call(f"/{m.uuid}", "cronradar.example.com") == b"django"
    assert passed == [f"/{m.uuid}"]
    assert PingLog.objects.filter(monitor=m, kind="start").count() == 2
