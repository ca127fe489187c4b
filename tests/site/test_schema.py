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
