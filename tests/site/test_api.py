"""cronradar.api: the OpenAPI schema is public and lists every endpoint."""
import pytest

pytestmark = pytest.mark.django_db


def test_openapi_schema_is_public_and_lists_endpoints(client):
    resp = client.get("/api/v1/schema/?format=json")
    assert resp.status_code == 200
    doc = resp.json()
    assert sorted(doc["paths"]) == [
        "/api/v1/api-keys/", "/api/v1/api-keys/{id}/", "/api/v1/audit-log/",
        "/api/v1/channels/", "/api/v1/channels/by-name/{name}/", "/api/v1/channels/test/",
        "/api/v1/channels/{id}/", "/api/v1/channels/{id}/test/",
        "/api/v1/deliveries/",
        "/api/v1/escalation-policies/", "/api/v1/escalation-policies/by-name/{name}/",
        "/api/v1/escalation-policies/{id}/",
        "/api/v1/import/crontab/", "/api/v1/import/k8s/",
        "/api/v1/incidents/", "/api/v1/incidents/{id}/", "/api/v1/incidents/{id}/ack/",
        "/api/v1/incidents/{id}/resolve/",
        "/api/v1/maintenance-windows/", "/api/v1/maintenance-windows/{id}/",
        "/api/v1/members/", "/api/v1/members/{id}/", "/api/v1/metrics/",
        "/api/v1/monitors/", "/api/v1/monitors/by-slug/{slug}/", "/api/v1/monitors/{id}/",
        "/api/v1/monitors/{id}/advice/",
        "/api/v1/monitors/{id}/pause/", "/api/v1/monitors/{id}/pings/",
        "/api/v1/monitors/{id}/resume/", "/api/v1/monitors/{id}/runs/",
        "/api/v1/monitors/{id}/stats/",
        "/api/v1/organisation/", "/api/v1/organisation/export/",
        "/api/v1/organisations/", "/api/v1/organisations/{id}/",
        "/api/v1/projects/", "/api/v1/projects/{id}/", "/api/v1/usage/"]
    monitor = doc["components"]["schemas"]["Monitor"]["properties"]
    assert monitor["grace"]["type"] == "integer"
    assert doc["components"]["securitySchemes"]["ApiKey"]["scheme"] == "bearer"
