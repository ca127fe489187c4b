"""cronradar.schema: the schema describes each channel kind's config, and the docs
page is served locally."""
import pytest

pytestmark = pytest.mark.django_db


def test_the_schema_describes_each_channel_kinds_config_and_the_docs_page_is_local(client,
                                                                                  api):
    from alerts.integrations import KINDS

    doc = client.get("/api/v1/schema/?format=json").json()
    config = doc["components"]["schemas"]["ChannelRequest"]["properties"]["config"]
    assert [s["title"] for s in config["anyOf"]] == list(KINDS)
    assert config["anyOf"][list(KINDS).index("pagerduty")]["required"] == ["routing_key"]
    monitor = doc["components"]["schemas"]["Monitor"]["properties"]
    assert monitor["failure_threshold"] == {"type": "integer", "maximum": 100, "minimum": 1}
    assert monitor["flapping_since"]["readOnly"] is True
    assert set(doc["paths"]["/api/v1/monitors/"]["post"]["responses"]) == {
        "201", "400", "401", "403", "404", "429"}
    page = client.get("/api/v1/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in html and "cdn" not in html
    assert api.options("/api/v1/monitors/by-slug/x/").json()["name"] == "By slug"
    assert client.options("/api/v1/docs/").status_code == 405


def test_the_schema_has_the_monitors_read_only_warnings(client):
    doc = client.get("/api/v1/schema/?format=json").json()
    schemas = doc["components"]["schemas"]
    assert schemas["Monitor"]["properties"]["warnings"]["readOnly"] is True
    assert schemas["Monitor"]["properties"]["warnings"]["items"] == {
        "$ref": "#/components/schemas/MonitorWarning"}
    assert schemas["MonitorWarning"]["required"] == ["code", "message"]
    assert "warnings" not in schemas["MonitorRequest"]["properties"]


def test_the_schema_has_a_monitors_chosen_uuid_description_methods_and_n_pings(client):
    schemas = client.get("/api/v1/schema/?format=json").json()["components"]["schemas"]
    request, answer = schemas["MonitorRequest"]["properties"], schemas["Monitor"]["properties"]
    assert request["uuid"]["format"] == "uuid" and "uuid" in answer
    assert {"description", "methods"} <= set(request) and "n_pings" not in request
    assert answer["n_pings"]["readOnly"] is True


# --- every bound the schema states is the server's -------------------------------------------

BOUNDED = ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems")
# body components not walked, and why
NOT_WALKED = {
    "IncidentActionRequest": "acting once changes the incident (tests/alerts/test_api.py "
                             "test_ack_and_resolve_through_the_api sends the 201st character)",
    "CrontabInputRequest": "an import (tests/monitors/imports)",
    "MemberRequest": "the people of the organisation (tests/accounts/test_api.py)",
    "PatchedMemberRequest": "username and email cannot be changed",
    "ChannelTestConfigRequest": "it sends a notification and stores nothing: its one bound "
                                "is test_a_channel_test_refuses_a_name_past_its_bound's",
}
# a value at the bound that passes every other check too, where "a" * n would not
AT_BOUND = {"timezone": None, "schedule": None}  # no zone or cron expression is that long


def bounds(prop: dict, item=None):
    """(value the server must refuse, value it must accept or None) for each bound of
    one property's schema (``oneOf`` branches: the first with bounds); ``item``:
    an item of a list of objects."""
    for branch in prop.get("oneOf", [prop]):
        if any(k in branch for k in BOUNDED):
            prop = branch
            break
    if prop.get("type") == "array" and "items" in prop and "$ref" not in prop["items"]:
        for outside, inside in bounds(prop["items"]):
            yield [outside], None if inside is None else [inside]
    step = 1 if prop.get("type") == "integer" else 0.01
    if "minimum" in prop:
        m = prop["minimum"]
        yield (m, m + step) if prop.get("exclusiveMinimum") else (m - step, m)
    if "maximum" in prop:
        m = prop["maximum"]
        yield (m, m - step) if prop.get("exclusiveMaximum") else (m + step, m)
    if "maxLength" in prop:
        yield "a" * (prop["maxLength"] + 1), "a" * prop["maxLength"]
    if prop.get("minLength", 0) > 0:
        yield "a" * (prop["minLength"] - 1), "a" * prop["minLength"]
    if "maxItems" in prop:
        items = [f"t{i}" if item is None else item for i in range(prop["maxItems"] + 1)]
        yield items, items[1:]
    if prop.get("minItems", 0) > 0:
        yield [], None


@pytest.fixture
def targets(project, make_monitor):
    """The owner's client, an item of each list of ids or objects, and for each
    walked component the URL that
    PATCHes one of its objects and how a property's value is sent (a tier's fields
    inside ``tiers``)."""
    from alerts.models import Channel
    from tests.helpers import as_person, person

    owner = as_person(person("olga", project.organisation, "owner"))
    channel = Channel.objects.create(project=project, kind="email", name="mail",
                                     config={"to": ["a@example.com"]})
    made = lambda path, body: owner.post(path, body, format="json").json()["id"]  # noqa: E731
    policy = made("/api/v1/escalation-policies/", {"project": project.pk, "name": "p", "tiers": [
        {"delay": 0, "channels": [channel.pk]}]})
    window = made("/api/v1/maintenance-windows/", {
        "project": project.pk, "name": "w", "tag": "db", "schedule": "0 2 * * *",
        "timezone": "UTC", "duration": 3600})
    key = made("/api/v1/api-keys/", {"project": project.pk, "name": "ci"})
    plain = lambda name, value: {name: value}  # noqa: E731
    tier = lambda name, value: {"tiers": [  # noqa: E731
        {"delay": 0, "channels": [channel.pk], name: value}]}
    return owner, {"tiers": {"delay": 0, "channels": [channel.pk]}, "channels": channel.pk}, {
        "PatchedMonitorRequest": (f"/api/v1/monitors/{make_monitor().pk}/", plain),
        "PatchedEscalationPolicyRequest": (f"/api/v1/escalation-policies/{policy}/", plain),
        "TierRequest": (f"/api/v1/escalation-policies/{policy}/", tier),
        "PatchedMaintenanceWindowRequest": (f"/api/v1/maintenance-windows/{window}/", plain),
        "PatchedChannelRequest": (f"/api/v1/channels/{channel.pk}/", plain),
        "PatchedApiKeyRequest": (f"/api/v1/api-keys/{key}/", plain),
        "PatchedProjectRequest": (f"/api/v1/projects/{project.pk}/", plain),
        "PatchedOrganisationRequest": (f"/api/v1/organisations/{project.organisation.pk}/",
                                       plain),
    }


def test_the_server_refuses_just_outside_each_bound_the_schema_states_and_takes_the_bound(
        client, targets, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_CLASSES": []}
    owner, items, walked = targets
    schemas = client.get("/api/v1/schema/?format=json").json()["components"]["schemas"]
    wrong, checked = [], 0
    for component, schema in schemas.items():
        props = {k: v for k, v in schema.get("properties", {}).items()
                 if not v.get("readOnly") and list(bounds(v))}
        twin = "Patched" + component
        if not props or not component.endswith("Request") or twin in schemas \
                or component in NOT_WALKED:
            continue
        url, body = walked[component]  # a KeyError: a new component to walk (or exempt)
        for name, prop in props.items():
            for outside, inside in bounds(prop, items.get(name)):
                checked += 1
                resp = owner.patch(url, body(name, outside), format="json")
                key = "tiers" if component == "TierRequest" else name
                if resp.status_code != 400 or key not in resp.json():
                    wrong.append(f"{component}.{name}={str(outside)[:20]}: {resp.status_code}")
                if inside is None or (name in AT_BOUND and isinstance(inside, str)):
                    continue
                before = owner.get(url).json()
                resp = owner.patch(url, body(name, inside), format="json")
                if resp.status_code != 200:
                    wrong.append(f"{component}.{name}={str(inside)[:20]}: "
                                 f"{resp.status_code} {resp.json()}")
                key in before and owner.patch(url, {key: before[key]}, format="json")
    assert "\n".join(wrong) == ""
    assert checked >= 50


def test_a_channel_test_refuses_a_name_past_its_bound(client, project):
    """``POST /api/v1/channels/test/``'s ``name`` has the schema's bound (a channel's
    200 characters): one more is a 400 naming it, before anything is sent."""
    from tests.helpers import as_person, person

    owner = as_person(person("olga", project.organisation, "owner"))
    schema = client.get("/api/v1/schema/?format=json").json()["components"]["schemas"]
    assert schema["ChannelTestConfigRequest"]["properties"]["name"]["maxLength"] == 200
    resp = owner.post("/api/v1/channels/test/", {
        "project": project.pk, "kind": "webhook", "name": "a" * 201,
        "config": {"url": "http://127.0.0.1:9/hook"}}, format="json")
    assert resp.status_code == 400
    assert resp.json() == {"name": ["Ensure this field has no more than 200 characters."]}


def test_the_lists_limit_states_the_bounds_the_server_checks(client, api):
    """QA of issue 23: ``?limit=`` was a bare integer in the schema; the server takes
    1-1000 and answers 400 outside."""
    doc = client.get("/api/v1/schema/?format=json").json()
    (limit,) = [p for p in doc["paths"]["/api/v1/monitors/"]["get"]["parameters"]
                if p["name"] == "limit"]
    assert limit["schema"] == {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}
    assert [api.get(f"/api/v1/monitors/?limit={n}").status_code for n in (0, 1, 1000, 1001)] \
        == [400, 200, 200, 400]
