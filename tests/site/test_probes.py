"""cronradar.probes: the operator's endpoints ahead of Django."""
from cronradar.probes import Probes
from tests.helpers import wsgi_call


def _app_never_called(environ, start_response):
    raise AssertionError("the request went past the probes")


def test_healthz_answers_ok_without_touching_anything():
    status, headers, body = wsgi_call(Probes(_app_never_called), "/healthz")
    assert (status, body) == ("200 OK", b"ok\n")
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert headers["Cache-Control"] == "no-store"


def test_healthz_head_has_no_body():
    assert wsgi_call(Probes(_app_never_called), "/healthz", "HEAD")[::2] == ("200 OK", b"")


def test_other_paths_go_on_to_the_app():
    def app(environ, start_response):
        start_response("204 No Content", [])
        return [environ["PATH_INFO"].encode()]

    assert wsgi_call(Probes(app), "/healthz/x")[::2] == ("204 No Content", b"/healthz/x")


# Request ids and the access log --------------------------------------------------

import io  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import re  # noqa: E402

import pytest  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402

from core import logs  # noqa: E402
from monitors.views import PingRoute  # noqa: E402

GENERATED = re.compile(r"[0-9a-f]{24}")


def _site():
    return Probes(PingRoute(get_wsgi_application()))


def _logging_app(environ, start_response):
    logging.getLogger("tests.site.probes").warning("inside")
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"x"]


@pytest.mark.django_db
def test_a_ping_and_a_django_page_get_a_generated_request_id(make_monitor, settings):
    settings.CRONRADAR_TRUST_X_FORWARDED_FOR = False
    m = make_monitor()
    site = _site()
    status, headers, body = wsgi_call(site, f"/ping/{m.uuid}", headers={"X-Request-ID": "mine"})
    assert (status, body) == ("200 OK", b"OK\n")
    assert GENERATED.fullmatch(headers["X-Request-ID"])  # not taken: no trusted proxy
    page = wsgi_call(site, "/accounts/login/", host="testserver")
    other = wsgi_call(site, "/healthz")
    ids = {headers["X-Request-ID"], page[1]["X-Request-ID"], other[1]["X-Request-ID"]}
    assert len(ids) == 3 and all(GENERATED.fullmatch(i) for i in ids)


@pytest.mark.django_db
def test_behind_a_trusted_proxy_its_request_id_is_taken_and_echoed(make_monitor, settings):
    settings.CRONRADAR_TRUST_X_FORWARDED_FOR = True
    m = make_monitor()
    site = _site()
    nginx = "0f9e8d7c6b5a49382716a5b4c3d2e1f0"  # nginx's $request_id: 32 hex digits
    assert wsgi_call(site, f"/ping/{m.uuid}", headers={"X-Request-ID": nginx}
                     )[1]["X-Request-ID"] == nginx
    assert wsgi_call(site, f"/ping/{m.uuid}", headers={"X-Request-ID": "req-4.2:a_b"}
                     )[1]["X-Request-ID"] == "req-4.2:a_b"
    assert wsgi_call(site, "/accounts/login/", host="testserver",
                     headers={"X-Request-ID": "a" * 200})[1]["X-Request-ID"] == "a" * 200
    # too long, control characters, non-ASCII, empty, and what could pose as another
    # field of a plain line (QA: "a]b [request_id=forged")
    for bad in ("a" * 201, "a\x1bb", "é", "", "req-42 a", "a]b [request_id=forged", 'a"b'):
        given = wsgi_call(site, f"/ping/{m.uuid}", headers={"X-Request-ID": bad})
        assert GENERATED.fullmatch(given[1]["X-Request-ID"])


def test_the_request_id_is_on_the_log_lines_of_its_request(settings, caplog):
    settings.CRONRADAR_TRUST_X_FORWARDED_FOR = True
    handler = logging.StreamHandler(out := io.StringIO())
    handler.addFilter(logs.ContextFilter())
    handler.setFormatter(logs.JsonFormatter())
    logging.getLogger("tests.site.probes").addHandler(handler)
    try:
        wsgi_call(Probes(_logging_app), "/x", headers={"X-Request-ID": "r-7"})
    finally:
        logging.getLogger("tests.site.probes").removeHandler(handler)
    assert json.loads(out.getvalue())["request_id"] == "r-7"
    assert logs.current() == {}  # unbound after the request


def _access_lines(formatter, path: str, **kwargs) -> list[str]:
    handler = logging.StreamHandler(out := io.StringIO())
    handler.addFilter(logs.ContextFilter())
    handler.setFormatter(formatter)
    access = logging.getLogger("cronradar.access")
    access.addHandler(handler)
    try:
        status, headers, _ = wsgi_call(_site(), path, **kwargs)
    finally:
        access.removeHandler(handler)
    return out.getvalue().splitlines(), headers["X-Request-ID"]


@pytest.mark.django_db
def test_no_access_line_unless_the_access_log_is_on(make_monitor, settings):
    settings.CRONRADAR_ACCESS_LOG = False
    assert _access_lines(logs.PlainFormatter(), f"/ping/{make_monitor().uuid}")[0] == []


@pytest.mark.django_db
def test_access_line_escapes_every_client_value_in_plain_format(make_monitor, settings):
    """The attack of the issue: ``curl ".../ping/<uuid>/%0aINJECTED"``."""
    settings.CRONRADAR_ACCESS_LOG, settings.CRONRADAR_TRUST_X_FORWARDED_FOR = True, True
    m = make_monitor()
    lines, rid = _access_lines(
        logs.PlainFormatter(), f"/ping/{m.uuid}/\nINJECTED?x=\r\nINJECTED",
        headers={"User-Agent": "curl\nINJECTED",
                 "X-Forwarded-For": "10.0.0.1, 198.51.100.7"},
        remote_addr="10.9.9.9")
    assert len(lines) == 1
    time, rest = lines[0].split(" ", 1)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", time)
    head = (f'INFO cronradar.access [request_id={rid}] GET "/ping/{m.uuid}/\\nINJECTED'
            f'?x=\\r\\nINJECTED" 400 ')
    assert re.fullmatch(re.escape(head) + r"\d+\.\dms "
                        + re.escape('198.51.100.7 "curl\\nINJECTED"'), rest), rest


@pytest.mark.django_db
def test_access_line_quotes_cannot_be_closed_by_the_client(make_monitor, settings):
    """QA: ``curl -A 'x" 200 0.1ms 1.2.3.4 "forged'`` posed as the fields after it."""
    settings.CRONRADAR_ACCESS_LOG = True
    m = make_monitor()
    lines, _ = _access_lines(logs.PlainFormatter(), f'/ping/{m.uuid}/a" 200 "b',
                             headers={"User-Agent": 'x" 200 0.1ms 1.2.3.4 "forged\\'})
    assert lines[0].endswith(f'GET "/ping/{m.uuid}/a\\" 200 \\"b" 400 '
                             + lines[0].rsplit(" 400 ", 1)[1].split(" ")[0]
                             + ' 127.0.0.1 "x\\" 200 0.1ms 1.2.3.4 \\"forged\\\\"'), lines[0]


@pytest.mark.django_db
def test_access_line_in_json_has_the_request_fields(make_monitor, settings):
    settings.CRONRADAR_ACCESS_LOG, settings.CRONRADAR_TRUST_X_FORWARDED_FOR = True, False
    m = make_monitor()
    lines, rid = _access_lines(logs.JsonFormatter(), f"/ping/{m.uuid}/\nINJECTED",
                               headers={"User-Agent": "curl\nINJECTED",
                                        "X-Forwarded-For": "198.51.100.7"},
                               remote_addr="10.9.9.9")
    assert len(lines) == 1 and lines[0].startswith('{"time": ')
    line = json.loads(lines[0])
    assert isinstance(line.pop("duration_ms"), float)
    assert line.pop("time").endswith("Z")
    assert line.pop("message").startswith(f'GET "/ping/{m.uuid}/\nINJECTED" 400 ')
    assert line == {
        "level": "INFO", "logger": "cronradar.access", "request_id": rid,
        "method": "GET", "path": f"/ping/{m.uuid}/\nINJECTED",
        "status": 400, "client": "10.9.9.9", "user_agent": "curl\nINJECTED"}


@pytest.mark.django_db
def test_with_the_https_redirect_on_probes_and_pings_are_answered_over_http(
        make_monitor, settings):
    """An https CRONRADAR_BASE_URL redirects plain http (cronradar.settings), but
    never a probe, /metrics or a ping (a redirected ping is a lost one)."""
    settings.SECURE_SSL_REDIRECT = True
    m = make_monitor()
    site = _site()
    assert wsgi_call(site, "/healthz")[::2] == ("200 OK", b"ok\n")
    assert wsgi_call(site, "/metrics")[0] == "200 OK"  # loopback: no token needed
    assert wsgi_call(site, f"/ping/{m.uuid}")[::2] == ("200 OK", b"OK\n")
    page = wsgi_call(site, "/login/", host="testserver")
    assert (page[0], page[1]["Location"]) == ("301 Moved Permanently",
                                              "https://testserver/login/")
