"""cronradar_sdk.client.ApiClient: URLs and configuration, every list's pages followed
through ``Link: rel="next"`` (150 monitors in pages of 100 from a local stand-in
server), errors as ApiError with the status and the server's message, retries of
429/503; and against a live `manage.py serve`: an upsert's status, a paged list,
a refused body."""
import json
import urllib.request

import pytest
from cronradar_sdk.client import ApiClient, ApiError, next_link

from tests.live import free_port
from tests.sdk.conftest import KEY, paged

MONITORS = [{"id": i, "slug": f"m{i}"} for i in range(1, 151)]


def test_list_follows_link_next_through_every_page(stub):
    s = stub({("GET", "/api/v1/monitors/"): paged(MONITORS, 100)})
    assert s.client().list("monitors/") == MONITORS
    assert [r[1] for r in s.requests] == ["/api/v1/monitors/",
                                          "/api/v1/monitors/?limit=100&cursor=100"]
    assert {r[2]["Authorization"] for r in s.requests} == {f"Bearer {KEY}"}


def test_an_older_server_that_does_not_page_is_one_page(stub):
    s = stub({("GET", "/api/v1/monitors/"): lambda q, b, st: (200, {}, MONITORS)})
    assert s.client().list("monitors/") == MONITORS
    assert [r[1] for r in s.requests] == ["/api/v1/monitors/"]


def test_get_reads_only_the_first_page(stub):
    s = stub({("GET", "/api/v1/monitors/"): paged(MONITORS, 100)})
    assert s.client().get("/monitors/") == MONITORS[:100]


def test_a_next_link_on_another_host_is_read_from_the_service_itself(stub):
    # the key is sent to the client's own URL only: a proxy's host in the Link is dropped
    s = stub({("GET", "/api/v1/monitors/"): paged(MONITORS, 60,
                                                   host="http://internal.invalid:8000")})
    assert s.client().list("monitors/") == MONITORS
    assert len(s.requests) == 3


def test_a_next_page_that_repeats_is_an_error_not_a_loop(stub):
    def loop(query, body, stub):
        return 200, {"Link": f'<{stub.url}/api/v1/monitors/?cursor=5>; rel="next"'}, [{"id": 1}]
    s = stub({("GET", "/api/v1/monitors/"): loop})
    with pytest.raises(ApiError, match="next page repeats"):
        s.client().list("monitors/")
    assert len(s.requests) == 2


def test_a_list_answer_that_is_not_a_list_is_an_error(stub):
    s = stub({("GET", "/api/v1/monitors/"): lambda q, b, st: (200, {}, {"id": 1})})
    with pytest.raises(ApiError, match="not a list"):
        s.client().list("monitors/")


@pytest.mark.parametrize(("header", "found"), [
    ('<https://h/api/v1/x/?cursor=3>; rel="next"', "https://h/api/v1/x/?cursor=3"),
    ('<https://h/p>; rel="prev", <https://h/n>; rel="next"', "https://h/n"),
    ("<https://h/n>; rel=next", "https://h/n"),
    ('<https://h/p>; rel="prev"', None),
    ("", None),
])
def test_next_link(header, found):
    assert next_link(header) == found


def test_an_error_answer_raises_with_its_status_and_message(stub):
    s = stub({("PUT", "/api/v1/monitors/by-slug/x/"): lambda q, b, st: (
        400, {}, {"grace": ["required"], "tiers": [{}, {"channels": ["no channel 9"]}]})})
    with pytest.raises(ApiError) as e:
        s.client().put("monitors/by-slug/x/", {"name": "x"})
    assert (e.value.status, e.value.message) == (400, "grace: required; tiers.1.channels: "
                                                      "no channel 9")
    assert e.value.data == {"grace": ["required"], "tiers": [{}, {"channels": ["no channel 9"]}]}
    assert str(e.value) == (f"PUT {s.url}/api/v1/monitors/by-slug/x/: 400: grace: required; "
                            "tiers.1.channels: no channel 9")


def test_detail_is_the_message(stub):
    s = stub({("DELETE", "/api/v1/channels/3/"): lambda q, b, st: (
        404, {}, {"detail": "Not found."})})
    with pytest.raises(ApiError) as e:
        s.client().delete("channels/3/")
    assert (e.value.status, e.value.message) == (404, "Not found.")


def test_body_and_headers_sent(stub):
    s = stub({("POST", "/api/v1/channels/"): lambda q, b, st: (201, {}, {"id": 4})})
    assert s.client().post("/channels/", {"name": "ops"}) == {"id": 4}
    method, path, headers, raw = s.requests[0]
    assert (method, path, json.loads(raw)) == ("POST", "/api/v1/channels/", {"name": "ops"})
    assert headers["Content-Type"] == "application/json"
    assert headers["User-Agent"].startswith("cronradar-sdk/")


def test_request_gives_the_status_of_an_upsert(stub):
    s = stub({("PUT", "/api/v1/monitors/by-slug/a/"): lambda q, b, st: (201, {}, {"id": 1})})
    resp = s.client().request("PUT", "monitors/by-slug/a/", {"name": "a"})
    assert (resp.status, resp.data) == (201, {"id": 1})


def test_429_is_retried_after_retry_after(stub):
    answers = iter([(429, {"Retry-After": "0"}, {"detail": "slow down"}), (200, {}, [1])])
    s = stub({("GET", "/api/v1/monitors/"): lambda q, b, st: next(answers)})
    assert s.client().get("monitors/") == [1]
    assert len(s.requests) == 2


def test_retries_are_bounded(stub):
    s = stub({("POST", "/api/v1/channels/"): lambda q, b, st: (
        503, {"Retry-After": "0"}, {"detail": "database unavailable"})})
    with pytest.raises(ApiError) as e:
        s.client(retries=2).post("channels/", {})
    assert (e.value.status, e.value.message, len(s.requests)) == (503, "database unavailable", 3)


def test_a_long_retry_after_is_not_waited_for(stub):
    s = stub({("GET", "/api/v1/monitors/"): lambda q, b, st: (
        429, {"Retry-After": "3600"}, {"detail": "slow down"})})
    with pytest.raises(ApiError) as e:
        s.client().get("monitors/")
    assert (e.value.status, len(s.requests)) == (429, 1)


def test_an_unreachable_service_is_status_0():
    client = ApiClient(url=f"http://127.0.0.1:{free_port()}", api_key=KEY, retries=1)
    with pytest.raises(ApiError) as e:
        client.get("monitors/")
    assert e.value.status == 0 and e.value.message.startswith("cannot reach http://127.0.0.1:")


def test_configuration_from_the_environment(monkeypatch):
    monkeypatch.setenv("CRONRADAR_URL", "https://cr.example.com/")
    monkeypatch.setenv("CRONRADAR_API_KEY", "cr_env")
    client = ApiClient()
    assert (client.url, client.api_key) == ("https://cr.example.com", "cr_env")
    assert ApiClient(url="http://other", api_key="k").url == "http://other"


@pytest.mark.parametrize(("env", "kw", "message"), [
    ({}, {"api_key": "k"}, "no service URL: set CRONRADAR_URL (or give url=)"),
    ({"CRONRADAR_URL": "https://x"}, {}, "no API key: set CRONRADAR_API_KEY (or give api_key=)"),
    ({}, {"url": "ftp://x", "api_key": "k"}, "the service URL must be http(s)://host, not 'ftp://x'"),
])
def test_missing_configuration_is_a_value_error(monkeypatch, env, kw, message):
    monkeypatch.delenv("CRONRADAR_URL", raising=False)
    monkeypatch.delenv("CRONRADAR_API_KEY", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ValueError) as e:
        ApiClient(**kw)
    assert str(e.value) == message


@pytest.mark.parametrize(("path", "url"), [
    ("monitors/", "https://h/api/v1/monitors/"),
    ("/monitors/", "https://h/api/v1/monitors/"),
    ("/api/v3/checks/", "https://h/api/v3/checks/"),
    ("https://h/api/v1/x/?cursor=1", "https://h/api/v1/x/?cursor=1"),
    ("http://proxy:8000/api/v1/x/?cursor=1", "https://h/api/v1/x/?cursor=1"),
])
def test_url_of(path, url):
    assert ApiClient(url="https://h", api_key="k").url_of(path) == url


# --- against the real service ---------------------------------------------------------

def client_of(service, project):
    key = service.manage("createapikey", "--project", project).strip().splitlines()[-1]
    return ApiClient(url=service.url, api_key=key)


@pytest.mark.live
def test_live_upsert_by_slug_answers_201_then_200(service):
    client = client_of(service, "sdk-api-upsert")
    body = {"name": "Nightly", "kind": "cron", "schedule": "0 3 * * *", "grace": 60}
    first = client.request("PUT", "monitors/by-slug/nightly/", body)
    second = client.request("PUT", "monitors/by-slug/nightly/", {"grace": 120})
    assert (first.status, second.status) == (201, 200)
    assert (second.data["id"], second.data["grace"]) == (first.data["id"], 120)


@pytest.mark.live
def test_live_list_follows_the_service_s_own_link_header(service):
    client = client_of(service, "sdk-api-paged")
    m = client.post("monitors/", {"name": "job", "period": 3600, "grace": 60})
    # 90 pings: the list holds a monitor's newest 100 (CRONRADAR_KEEP_PINGS)
    for _ in range(90):
        with urllib.request.urlopen(m["ping_url"], timeout=5):
            pass
    pings = client.list(f"monitors/{m['id']}/pings/", {"limit": 40})
    assert len(client.get(f"monitors/{m['id']}/pings/", {"limit": 40})) == 40
    assert len(pings) == 90 and len({p["id"] for p in pings}) == 90
    assert [p["id"] for p in pings] == sorted((p["id"] for p in pings), reverse=True)


@pytest.mark.live
@pytest.mark.once
def test_live_the_monitors_list_is_read_through_its_pages(service):
    client = client_of(service, "sdk-api-monitors-paged")
    made = [client.put(f"monitors/by-slug/job-{i:03}/", {"name": f"job {i}", "period": 3600,
                                                         "grace": 60})["id"] for i in range(102)]
    assert [m["id"] for m in client.get("monitors/")] == made[:100]
    assert [m["id"] for m in client.list("monitors/")] == made
    assert [m["id"] for m in client.list("monitors/", {"limit": 2, "q": "job 10"})] == [
        made[10], *made[100:]]


@pytest.mark.live
def test_live_a_refused_body_is_an_api_error_naming_the_field(service):
    client = client_of(service, "sdk-api-refused")
    with pytest.raises(ApiError) as e:
        client.put("monitors/by-slug/x/", {"name": "x", "period": 60, "grace": 60,
                                           "colour": "red"})
    assert (e.value.status, e.value.message) == (400, "colour: unknown field")
