"""Optional error reporting and tracing, set up once per process (``CronRadarConfig.ready``).

- ``SENTRY_DSN``: sentry-sdk with its Django and Celery integrations; no personal
  data is sent (``send_default_pii=False``); the environment is ``CRONRADAR_ENV``.
- ``OTEL_EXPORTER_OTLP_ENDPOINT``: an OpenTelemetry ``TracerProvider`` whose spans
  go in batches to that endpoint over OTLP/HTTP (``<endpoint>/v1/traces``), with
  Django, Celery, psycopg and httpx instrumented. ``service.name`` is ``cronradar``
  unless ``OTEL_SERVICE_NAME`` says otherwise; the SDK reads its other ``OTEL_*``
  variables itself (headers, sampler, resource attributes, batch sizes). A
  prefork Celery worker's children instrument Celery again at
  ``worker_process_init``, as OpenTelemetry's Celery instrumentation asks; the
  batch processor restarts its thread in a forked child itself.

Neither is required. Either set while the ``observability`` extra is not installed
stops the start with ImproperlyConfigured naming
the observability extra (``.venv/bin/pip install -e '.[observability]'`` in a clone).
"""
from __future__ import annotations

import os

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

EXTRA = ("install the observability extra: in a clone, .venv/bin/pip install -e "
         "'.[observability]' (the image has it)")
_done: set[str] = set()


def setup() -> None:
    """Set up what the settings ask for (once per process; harmless to call again)."""
    if settings.SENTRY_DSN and "sentry" not in _done:
        _sentry()
        _done.add("sentry")
    if settings.OTEL_EXPORTER_OTLP_ENDPOINT and "otel" not in _done:
        _opentelemetry()
        _done.add("otel")


def _missing(variable: str, exc: ImportError) -> ImproperlyConfigured:
    return ImproperlyConfigured(f"{variable} is set but the observability extra is not "
                                f"installed ({exc.name}): {EXTRA}")


def _sentry() -> None:
    try:
        import sentry_sdk
        from sentry_sdk.integrations.celery import CeleryIntegration
        from sentry_sdk.integrations.django import DjangoIntegration
    except ImportError as exc:
        raise _missing("SENTRY_DSN", exc) from exc
    sentry_sdk.init(dsn=settings.SENTRY_DSN, environment=settings.CRONRADAR_ENV,
                    send_default_pii=False,
                    integrations=[DjangoIntegration(), CeleryIntegration()])


def _opentelemetry() -> None:
    try:
        from celery.signals import worker_process_init
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.instrumentation.celery import CeleryInstrumentor
        from opentelemetry.instrumentation.django import DjangoInstrumentor
        from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
        from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise _missing("OTEL_EXPORTER_OTLP_ENDPOINT", exc) from exc

    name = os.environ.get("OTEL_SERVICE_NAME") or "cronradar"
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
    # the exporter reads OTEL_EXPORTER_OTLP_ENDPOINT (and _HEADERS, _TIMEOUT...) itself;
    # the batch processor starts its thread again in a forked child (the SDK's at-fork hook)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    DjangoInstrumentor().instrument()
    PsycopgInstrumentor().instrument(enable_commenter=False)
    HTTPXClientInstrumentor().instrument()
    CeleryInstrumentor().instrument()  # beat, solo and thread pools, eager tasks

    @worker_process_init.connect(weak=False)
    def _in_each_prefork_child(**kwargs) -> None:
        # what OpenTelemetry's Celery docs ask of a prefork pool: instrument in the child
        CeleryInstrumentor().uninstrument()
        CeleryInstrumentor().instrument()
