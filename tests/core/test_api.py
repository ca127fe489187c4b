"""core.api: 4xx for bad ids and parameters, unknown body fields refused, cursor
paging with a Link header and ?since=/?until=."""
import pytest

from monitors.pings import PingInput, ingest
from tests.conftest import T0, S

pytestmark = pytest.mark.django_db


def test_api_edge_cases_are_4xx_not_500(api, make_monitor):
    m = make_monitor()
    assert api.get("/api/v1/nope/").json() == {"detail": "Not found."}
    assert api.get("/api/v1/monitors/1.5/").status_code == 404
    assert api.get(f"/api/v1/monitors/{2**63}/runs/").status_code == 404
    assert api.get(f"/api/v1/incidents/?monitor={2**63}").json() == {
        "monitor": ["must be a monitor id"]}
    assert api.get("/api/v1/incidents/?open=maybe").json() == {"open": ["must be true or false"]}
    for bad in ("0", "-1", "abc", "1001"):
        resp = api.get(f"/api/v1/monitors/{m.pk}/pings/?limit={bad}")
        assert resp.json() == {"limit": ["must be an integer from 1 to 1000"]}
    deep = api.post("/api/v1/monitors/", "[" * 100000, content_type="application/json")
    assert deep.status_code == 400 and "nested too deeply" in deep.json()["detail"]
    wrong_type = api.post("/api/v1/monitors/", "name=x", content_type="text/plain")
    assert wrong_type.status_code == 415


def test_unknown_fields_are_refused_read_only_ones_ignored(api, make_monitor):
    resp = api.post("/api/v1/monitors/", {"name": "a", "period": 60, "grace": 5,
                                          "colour": "red", "graec": 3}, format="json")
    assert (resp.status_code, resp.json()) == (400, {"colour": ["unknown field"],
                                                     "graec": ["unknown field"]})
    m = make_monitor()
    got = api.get(f"/api/v1/monitors/{m.pk}/").json()
    again = api.patch(f"/api/v1/monitors/{m.pk}/", {**got, "name": "renamed"}, format="json")
    assert again.status_code == 200 and again.json()["name"] == "renamed"  # a GET sent back
    for url, body in [("/api/v1/channels/", {"kind": "webhook", "config": {}, "url": "x"}),
                      ("/api/v1/escalation-policies/", {"name": "p", "tiers": [
                          {"delay": 0, "channels": [1], "wait": 5}]}),
                      ("/api/v1/maintenance-windows/", {"name": "w", "monitor_id": m.pk}),
                      ("/api/v1/api-keys/", {"name": "k", "scope": "all"})]:
        resp = api.post(url, body, format="json")
        assert resp.status_code == 400 and "unknown field" in str(resp.json()), (url, resp.json())


def test_pings_page_by_cursor_with_a_link_header(api, make_monitor):
    m = make_monitor(period=3600 * S, grace=60 * S)
    for i in range(5):
        ingest(m.pk, PingInput("log", body=f"line {i}".encode()), T0 + i * S)
    url = f"/api/v1/monitors/{m.pk}/pings/"
    first = api.get(url + "?limit=2")
    assert [p["body"] for p in first.json()] == ["line 4", "line 3"]
    link = first["Link"]
    assert link.startswith("<http://testserver/api/v1/monitors/") and link.endswith(
        '>; rel="next"')
    ingest(m.pk, PingInput("log", body=b"line 5"), T0 + 9 * S)  # arrives meanwhile
    second = api.get(link[1:link.index(">")])
    assert [p["body"] for p in second.json()] == ["line 2", "line 1"]
    third = api.get(second["Link"][1:second["Link"].index(">")])
    assert [p["body"] for p in third.json()] == ["line 0"]
    assert "Link" not in third
    window = api.get(url, {"since": "2026-01-05T12:00:01Z", "until": "2026-01-05T12:00:03Z"})
    assert [p["body"] for p in window.json()] == ["line 2", "line 1"]
    for bad, field in [({"since": "yesterday"}, "since"), ({"until": "2026-01-05T12:00:00"},
                                                           "until"),
                       ({"cursor": "abc"}, "cursor"), ({"limit": "0"}, "limit"),
                       ({"since": "2026-11-30T05:11:35+99:00"}, "since"),
                       ({"since": "0001-01-01T00:00:00+01:00"}, "since"),
                       ({"until": "9999-12-31T23:59:59-01:00"}, "until")]:
        resp = api.get(url, bad)
        assert resp.status_code == 400 and field in resp.json(), (bad, resp.json())


def test_runs_incidents_and_deliveries_page_too(api, make_monitor, hook):
    m = make_monitor(period=3600 * S, grace=60 * S, channels=[hook])
    for i in range(3):
        ingest(m.pk, PingInput("fail"), T0 + 10 * i * S)
        ingest(m.pk, PingInput("success"), T0 + (10 * i + 1) * S)
    runs = api.get(f"/api/v1/monitors/{m.pk}/runs/?limit=4")
    assert [r["outcome"] for r in runs.json()] == ["succeeded", "failed", "succeeded", "failed"]
    assert 'rel="next"' in runs["Link"]
    incidents = api.get("/api/v1/incidents/?limit=2")
    assert [i["opened_at"] for i in incidents.json()] == ["2026-01-05T12:00:20Z",
                                                         "2026-01-05T12:00:10Z"]
    rest = api.get(incidents["Link"][1:incidents["Link"].index(">")]).json()
    assert [i["opened_at"] for i in rest] == ["2026-01-05T12:00:00Z"]
    early = api.get("/api/v1/incidents/", {"until": "2026-01-05T12:00:10Z"}).json()
    assert [i["opened_at"] for i in early] == ["2026-01-05T12:00:00Z"]
    deliveries = api.get("/api/v1/deliveries/?limit=5")
    assert len(deliveries.json()) == 5 and 'rel="next"' in deliveries["Link"]
