"""cronradar.monitorsfile: a file checked against the schema the SDK ships (the
same file, read by path), which describes the API's monitor fields and each
channel kind's config; the SDK's diff and apply over the API's serializers."""
import json

import pytest
from cronradar_sdk import declarative
from django.test import RequestFactory
from rest_framework import exceptions

from alerts.api import SHOWN_TO_READERS, MonitorSerializer
from alerts.integrations import KINDS
from alerts.models import Channel, EscalationPolicy
from cronradar import monitorsfile
from monitors.models import Monitor
from tests.helpers import person

pytestmark = pytest.mark.django_db
SCHEMA = json.loads(monitorsfile.SCHEMA_PATH.read_text())


def test_the_server_reads_the_schema_the_sdk_ships():
    assert monitorsfile.SCHEMA_PATH.samefile(declarative.SCHEMA_PATH)
    assert declarative.schema() == SCHEMA


def test_the_schema_has_the_api_s_writable_monitor_fields():
    writable = [n for n, f in MonitorSerializer().fields.items() if not f.read_only]
    # uuid: a file is keyed by slug, and chosen UUIDs are refused where sign-up is
    # open, so an export applied to another project would fail to create them
    assert set(SCHEMA["$defs"]["monitor"]["properties"]) == set(writable) - {"project", "uuid"}


def test_the_schema_has_each_channel_kind_s_config():
    assert SCHEMA["$defs"]["channel"]["properties"]["kind"]["enum"] == list(KINDS)
    for kind, module in KINDS.items():
        config = SCHEMA["$defs"][f"config_{kind}"]
        api = {k for k, v in module.CONFIG_SCHEMA["properties"].items() if not v.get("readOnly")}
        # a credential left out keeps the stored one: required are only the others
        assert (set(config["properties"]), config.get("required", [])) == (
            api, [f for f in module.CONFIG_SCHEMA["required"] if f in SHOWN_TO_READERS]), kind
    # what the SDK writes as placeholders is what the API hides from readers
    assert set(declarative.SHOWN) == SHOWN_TO_READERS


def test_the_sdk_reads_schedule_aliases_as_the_service_stores_them():
    from monitors.schedule import _ALIASES

    assert declarative.CRON_ALIASES == _ALIASES


def test_problems_name_where_they_are():
    doc = {"version": 1, "channels": [{"name": "", "kind": "slack", "config": {"url": 1}}],
           "monitors": [{"slug": "a b", "grace": "600"}, {"name": "x"}]}
    assert monitorsfile.problems(doc) == [
        "$.channels[0].config.url: 1 is not of type 'string'",
        "$.channels[0].name: '' should be non-empty",
        "$.channels[0].name: '' does not match '\\\\S'",
        "$.monitors[0].grace: '600' is not of type 'integer'",
        "$.monitors[0].slug: 'a b' does not match '^[-a-zA-Z0-9_]+$'",
        "$.monitors[1]: 'slug' is a required property",
    ]
    assert monitorsfile.problems({"version": 1, "monitors": [{"slug": "a", "period": 60,
                                                             "grace": 5, "tags": ["x"]}]}) == []


def test_placeholders_keep_stored_credentials_where_nothing_expands_them():
    doc = {"version": 1, "channels": [{"name": "ops", "kind": "opsgenie", "config": {
        "api_key": "${CRONRADAR_OPS_API_KEY}", "region": "eu"}}]}
    assert monitorsfile.placeholders_kept(doc)["channels"][0]["config"] == {
        "api_key": "***", "region": "eu"}
    embedded = {"version": 1, "channels": [{"name": "m", "kind": "email", "config": {
        "to": ["${WHO}@example.com"]}}]}
    with pytest.raises(declarative.FileError) as e:
        monitorsfile.placeholders_kept(embedded)
    assert e.value.problems == ["channels[0] (m): config.to: a placeholder is expanded by "
                                "cronradar apply from its environment; here, write the value"]


def _request(project, role="admin"):
    request = RequestFactory().get("/")
    request.user = person(role, project.organisation, role)
    return request


def test_the_server_backend_applies_and_exports_as_the_api_would(project):
    backend = monitorsfile.ServerBackend(_request(project), project)
    doc = {"version": 1,
           "channels": [{"name": "ops", "kind": "webhook",
                         "config": {"url": "https://hooks.example.com/a", "secret": "s"}}],
           "escalation_policies": [{"name": "night", "tiers": [{"delay": 0,
                                                                "channels": ["ops"]}]}],
           "monitors": [{"slug": "nightly", "name": "Nightly", "kind": "cron",
                         "schedule": "0 3 * * *", "grace": 600, "slow_factor": 2.1,
                         "channels": ["ops"], "escalation_policy": "night"}]}
    changes = declarative.apply(doc, backend)
    assert declarative.summary(changes) == "3 created, 0 changed, 0 unchanged, 0 pruned"
    m = Monitor.objects.get(slug="nightly")
    ops = Channel.objects.get(name="ops")
    assert (m.alerting.escalation_policy.name, list(m.alerting.channels.all())) == ("night",
                                                                                   [ops])
    assert declarative.summary(declarative.apply(doc, backend)) == (
        "0 created, 0 changed, 3 unchanged, 0 pruned")
    exported, secrets = declarative.export(backend)
    assert secrets == {"CRONRADAR_OPS_URL": "https://hooks.example.com/a",
                       "CRONRADAR_OPS_SECRET": "s"}
    assert monitorsfile.problems(exported) == []
    assert exported["monitors"][0]["slow_factor"] == 2.1
    pruned = declarative.apply({"version": 1, "monitors": [], "escalation_policies": []},
                               backend, prune=True)
    assert [line for c in pruned for line in c.lines()] == [
        "pruned monitor nightly", "pruned escalation policy night"]
    assert (Monitor.objects.filter(deleted_at__isnull=True).count(),
            EscalationPolicy.objects.count(), Channel.objects.count()) == (0, 0, 1)


def test_the_server_backend_refuses_as_the_api_does(project):
    backend = monitorsfile.ServerBackend(_request(project, "member"), project)
    with pytest.raises(exceptions.PermissionDenied):
        declarative.apply({"version": 1, "channels": [{"name": "a", "kind": "slack",
                                                       "config": {"url": "https://s/h"}}]},
                          backend)
    with pytest.raises(exceptions.ValidationError) as e:
        declarative.apply({"version": 1, "monitors": [{"slug": "a", "name": "a", "grace": 5,
                                                       "period": 60, "timezone": "Mars/Base"}]},
                          backend)
    assert monitorsfile.refusal(e.value) == "timezone: unknown time zone 'Mars/Base'"
