"""Monitors as one file, on the server: the file checked against the JSON Schema the
SDK ships (``sdk/python/cronradar_sdk/monitors.schema.json``, read by path as
:mod:`cronradar.api` reads the job wrapper), and :class:`ServerBackend`, through
which the SDK's own diff and apply (:mod:`cronradar_sdk.declarative`) run over the
API's serializers and rules in this process (the dashboard's import), not over HTTP.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

from cronradar_sdk import declarative
from cronradar_sdk.client import message_of
from django.conf import settings
from django.db.models import Exists, OuterRef
from django.utils import timezone
from jsonschema import Draft202012Validator
from rest_framework.renderers import JSONRenderer

from alerts import api as alerts_api
from alerts.models import Channel, EscalationPolicy, Incident
from monitors import evaluator
from monitors.models import Monitor, Run

SCHEMA_PATH = (Path(settings.BASE_DIR) / "sdk" / "python" / "cronradar_sdk"
               / "monitors.schema.json")
MAX_PROBLEMS = 50


@functools.cache
def validator() -> Draft202012Validator:
    """The schema's validator (read once)."""
    return Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


def problems(doc) -> list[str]:
    """What makes ``doc`` not a monitors file, each ``$.monitors[0].grace: message``,
    in document order (at most :data:`MAX_PROBLEMS`); [] for a valid file. A file
    the schema admits can still be refused by the API (an unknown time zone, a name
    it does not have)."""
    found = sorted(validator().iter_errors(doc), key=lambda e: [str(p) for p in e.path])
    return [f"{e.json_path}: {e.message}" for e in found[:MAX_PROBLEMS]]


def placeholders_kept(doc: dict) -> dict:
    """``doc`` for a place with no environment to expand ``${NAME}`` from (the
    dashboard): a credential that is a placeholder keeps the stored one (``***``);
    a placeholder anywhere else in a channel's config is a FileError."""
    found = []
    channels = []
    for i, ch in enumerate(doc.get("channels") or []):
        config = dict(ch.get("config") or {})
        for key, value in config.items():
            if key not in declarative.SHOWN and isinstance(value, str) \
                    and declarative.PLACEHOLDER.fullmatch(value):
                config[key] = declarative.MASKED
            elif declarative.PLACEHOLDER.search(json.dumps(value)):
                found.append(f"channels[{i}] ({ch.get('name')}): config.{key}: a placeholder "
                             "is expanded by cronradar apply from its environment; here, write "
                             "the value")
        channels.append({**ch, "config": config})
    if found:
        raise declarative.FileError(found)
    return {**doc, "channels": channels} if "channels" in doc else doc


class ServerBackend(declarative.Backend):
    """A project read and written with the API's serializers, as ``request``'s
    person (their role decides what they may change, as in the API)."""

    def __init__(self, request, project):
        self.request, self.project = request, project

    def _data(self, serializer_class, rows, many=True):
        data = serializer_class(rows, many=many, context={"request": self.request}).data
        return json.loads(JSONRenderer().render(data))  # the API's JSON, Decimals as numbers

    def read(self) -> declarative.State:
        p = self.project
        monitors = (Monitor.objects.filter(project=p, deleted_at__isnull=True)
                    .select_related("project", "alerting")
                    .prefetch_related("alerting__channels")
                    .annotate(is_running=Exists(Run.objects.open().filter(monitor=OuterRef("pk"))),
                              has_open_incident=Exists(Incident.objects.filter(
                                  monitor=OuterRef("pk"), resolved_at__isnull=True)))
                    .order_by("pk"))
        return declarative.State(
            self._data(alerts_api.ChannelSerializer, Channel.objects.filter(
                project=p, deleted_at__isnull=True).order_by("pk")),
            self._data(alerts_api.EscalationPolicySerializer, EscalationPolicy.objects.filter(
                project=p).prefetch_related(*alerts_api.POLICY_PREFETCH).order_by("pk")),
            self._data(alerts_api.MonitorSerializer, monitors))

    def put(self, kind, key, body):
        if kind is declarative.MONITORS:
            instance = Monitor.objects.filter(project=self.project, slug=key,
                                              deleted_at__isnull=True).first()
            serializer = alerts_api.MonitorSerializer(
                instance, data={**body, "slug": key, "project": self.project.pk},
                partial=instance is not None, context={"request": self.request})
            serializer.is_valid(raise_exception=True)
            return self._data(alerts_api.MonitorSerializer, serializer.save(), many=False)
        view = (alerts_api.ChannelByName if kind is declarative.CHANNELS
                else alerts_api.EscalationPolicyByName)
        saved, _ = view.upsert(self.request, self.project, key, body)
        return self._data(view.serializer_class, saved, many=False)

    def delete(self, kind, obj):
        if kind is declarative.MONITORS:
            evaluator.delete(obj["id"], timezone.now())
        elif kind is declarative.CHANNELS:
            alerts_api.ChannelDetail().perform_destroy(Channel.objects.get(pk=obj["id"]))
        else:
            alerts_api.EscalationPolicyViewSet().perform_destroy(
                EscalationPolicy.objects.prefetch_related(*alerts_api.POLICY_PREFETCH).get(pk=obj["id"]))


def refusal(exc: Exception) -> str:
    """An API refusal as the SDK says one (``grace: required …; tiers.1.channels: …``)."""
    detail = getattr(exc, "detail", None)
    return str(exc) if detail is None else message_of(detail)
