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
