"""cronradar.observability: Sentry and OpenTelemetry, each against a local receiver.

Both set up process-global state, so each test runs Django in a subprocess
(the settings of this run: SQLite or the PostgreSQL of scripts/test's second run);
nothing leaves the machine."""
import gzip
import os
import re
import subprocess
import sys
import textwrap

import pytest

from tests.live import ROOT, Receiver

# A Django process with two views of its own: /boom/ raises, /query/ runs one SQL
# statement; the script asks each once through Django's test client, then flushes.
SCRIPT = textwrap.dedent("""
    import os, sys
    import django
    from django.db import connection
    from django.http import HttpResponse
    from django.urls import path

    class Exploded(Exception):
        pass

    def boom(request):
        raise Exploded("the view failed")

    def query(request):
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return HttpResponse("ok")

    urlpatterns = [path("boom/", boom), path("query/", query)]
    django.setup()
    from django.conf import settings
    from django.test import Client
    settings.ROOT_URLCONF = "__main__"
    client = Client(raise_request_exception=False)
    print(client.get(sys.argv[1]).status_code)
    if settings.SENTRY_DSN:
        import sentry_sdk
        sentry_sdk.flush(10)
    if settings.OTEL_EXPORTER_OTLP_ENDPOINT:
        from opentelemetry import trace
        trace.get_tracer_provider().force_flush(10_000)
""")


def _run(path: str, env: dict, extra: str = "") -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("SENTRY_DSN", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SERVICE_NAME")}
    environment.update(DJANGO_SETTINGS_MODULE="cronradar.settings", **env)
    return subprocess.run([sys.executable, "-c", extra + SCRIPT, path], cwd=ROOT,
                          env=environment, capture_output=True, text=True, timeout=60)


def _body(request) -> bytes:
    encoding = request.headers.get("Content-Encoding", "")
    if encoding == "gzip":
        return gzip.decompress(request.body)
    if encoding == "br":
        import brotli

        return brotli.decompress(request.body)
    return request.body


def test_an_exception_in_a_view_reaches_sentry():
    receiver = Receiver()
    try:
        dsn = receiver.url.replace("http://", "http://publickey@") + "/42"
        done = _run("/boom/", {"SENTRY_DSN": dsn, "CRONRADAR_ENV": "embedded"})
        assert done.stdout.strip() == "500", done.stderr
        envelope = _body(receiver.wait_for(lambda r: r.path == "/api/42/envelope/", 10))
    finally:
        receiver.close()
    assert b'"type":"Exploded"' in envelope.replace(b" ", b"")
    assert b"the view failed" in envelope
    assert b'"environment":"embedded"' in envelope.replace(b" ", b"")


def _spans(receiver) -> tuple[dict, list]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    export = ExportTraceServiceRequest()
    export.ParseFromString(receiver.wait_for(lambda r: r.path == "/v1/traces", 15).body)
    resource = {a.key: a.value.string_value
                for a in export.resource_spans[0].resource.attributes}
    spans = [span for rs in export.resource_spans for ss in rs.scope_spans
             for span in ss.spans]
    return resource, spans


def _traced(path: str, **env) -> tuple[dict, list]:
    receiver = Receiver()
    try:
        done = _run(path, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, **env})
        assert done.stdout.strip() == "200", done.stderr
        return _spans(receiver)
    finally:
        receiver.close()


def test_a_request_is_traced_to_the_otlp_endpoint():
    resource, spans = _traced("/query/")
    assert resource["service.name"] == "cronradar"
    server = [s for s in spans if s.kind == s.SPAN_KIND_SERVER]
    assert [s.name for s in server] == ["GET query/"]


def test_otel_service_name_overrides_the_service_name():
    resource, _ = _traced("/query/", OTEL_SERVICE_NAME="cronradar-eu")
    assert resource["service.name"] == "cronradar-eu"


@pytest.mark.skipif(not os.environ.get("DATABASE_URL", "").startswith("postgres"),
                    reason="the SQL span comes from the psycopg instrumentation: PostgreSQL")
def test_a_requests_sql_query_is_a_span_of_its_trace():
    _, spans = _traced("/query/")
    server = next(s for s in spans if s.kind == s.SPAN_KIND_SERVER)
    sql = [s for s in spans if s.kind == s.SPAN_KIND_CLIENT
           and "SELECT 1" in {a.value.string_value for a in s.attributes}]
    assert len(sql) == 1, spans
    assert (sql[0].trace_id, sql[0].parent_span_id) == (server.trace_id, server.span_id)


@pytest.mark.parametrize("variable, module", [
    ("SENTRY_DSN", "sentry_sdk"), ("OTEL_EXPORTER_OTLP_ENDPOINT", "opentelemetry.sdk")])
def test_without_the_extra_the_start_stops_naming_it(variable, module):
    # the extra is installed here: the import is made to fail as if it were not
    block = f"import sys; sys.modules[{module!r}] = None\n"
    done = _run("/query/", {variable: "http://key@127.0.0.1:9/1"}, extra=block)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert re.fullmatch(
        f"django.core.exceptions.ImproperlyConfigured: {variable} is set but the "
        rf"observability extra is not installed \({re.escape(module)}[.\w]*\): "
        + re.escape("install the observability extra: in a clone, .venv/bin/pip install -e "
                    "'.[observability]' (the image has it)"), last), last
