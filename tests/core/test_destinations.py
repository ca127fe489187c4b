"""The SSRF guard: channel URLs checked on save, the address checked where the
request actually goes (core.destinations)."""
import json
import socket

import httpx
import pytest

from alerts.integrations import webhook
from core import destinations
from core.destinations import GuardedTransport, blocked_reason, check_url, literal_address


@pytest.fixture
def guard(settings):
    settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES = True
    settings.CRONRADAR_ALLOWED_DESTINATIONS = []
    return settings


@pytest.mark.parametrize("host,address", [
    ("127.1", "127.0.0.1"), ("0x7f000001", "127.0.0.1"), ("2130706433", "127.0.0.1"),
    ("017700000001", "127.0.0.1"), ("10.0.0.1", "10.0.0.1"), ("::1", "::1"),
])
def test_every_spelling_of_an_address_is_read(host, address):
    assert str(literal_address(host)) == address


def test_names_are_not_addresses():
    assert literal_address("cafe.de") is None and literal_address("hooks.slack.com") is None


@pytest.mark.parametrize("address,reason", [
    ("127.0.0.1", "127.0.0.1"), ("169.254.169.254", "169.254.169.254"),
    ("100.64.0.1", "100.64.0.1"), ("0.0.0.0", "0.0.0.0"), ("224.0.0.1", "224.0.0.1"),
    ("::ffff:127.0.0.1", "127.0.0.1"), ("::127.0.0.1", "127.0.0.1"),
    ("64:ff9b::7f00:1", "127.0.0.1"), ("64:ff9b:1::a00:1", "10.0.0.1"),
    ("2002:7f00:1::1", "127.0.0.1"), ("fe80::1", "fe80::1"), ("fc00::1", "fc00::1"),
])
def test_non_public_addresses_are_found_in_every_form(address, reason):
    assert blocked_reason(literal_address(address)) == f"non-public address {reason}"


@pytest.mark.parametrize("address", ["93.184.215.14", "2606:2800:21f::1", "64:ff9b::5db8:d70e"])
def test_public_addresses_pass(address):
    assert blocked_reason(literal_address(address)) is None


@pytest.mark.parametrize("url", [
    "http://127.1/h", "http://0x7f000001/h", "http://[::ffff:127.0.0.1]/h",
    "http://169.254.169.254/latest/meta-data", "http://[::127.0.0.1]/h",
    "http://[64:ff9b::7f00:1]/h", "http://[2002:7f00:1::1]/h", "http://localhost:8080/h",
    "http://api.localhost/h",
])
def test_non_public_urls_are_refused_on_save(guard, url):
    with pytest.raises(ValueError) as exc:
        webhook.validate_config({"url": url})
    assert str(exc.value).startswith("url: ") and "public addresses" in str(exc.value)


def test_urls_are_checked_on_save_with_the_guard_off_too():
    assert check_url("http://127.0.0.1:9000/h") == "http://127.0.0.1:9000/h"
    assert check_url("https://bücher.example/h") == "https://bücher.example/h"
    for url in ("https://x.test/\x7f", "https://x .test/", "https://xn--a.example/"):
        with pytest.raises(ValueError):
            check_url(url)


def test_the_allowlist_lets_an_internal_receiver_through(guard):
    guard.CRONRADAR_ALLOWED_DESTINATIONS = ["10.1.0.0/16", "hooks.internal"]
    assert check_url("http://10.1.2.3/h") == "http://10.1.2.3/h"
    assert destinations.resolve("10.1.2.3", 80) == "10.1.2.3"
    with pytest.raises(ValueError):
        check_url("http://10.2.0.1/h")


def fake_dns(monkeypatch, *addresses):
    def getaddrinfo(host, port, *args, **kwargs):
        assert host == "hooks.example.com"
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (a, port)) for a in addresses]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def guarded(seen):
    def answer(request):
        seen.append(request)
        return httpx.Response(200)

    return httpx.Client(transport=GuardedTransport(httpx.MockTransport(answer)))


def test_the_request_goes_to_the_checked_address_with_its_name_kept(guard, monkeypatch):
    fake_dns(monkeypatch, "93.184.215.14")
    seen = []
    guarded(seen).post("https://hooks.example.com/cr?x=1", content=b"{}")
    [request] = seen
    assert str(request.url) == "https://93.184.215.14/cr?x=1"
    assert request.headers["Host"] == "hooks.example.com"
    assert request.extensions["sni_hostname"] == "hooks.example.com"  # TLS name and check


def test_a_name_with_any_private_address_is_refused_at_send_time(guard, monkeypatch):
    fake_dns(monkeypatch, "93.184.215.14", "10.0.0.7")  # DNS rebinding, or a split answer
    seen = []
    with pytest.raises(destinations.BlockedDestination) as exc:
        guarded(seen).post("https://hooks.example.com/cr")
    assert str(exc.value) == "hooks.example.com resolves to non-public address 10.0.0.7"
    assert seen == []


def test_without_the_guard_requests_go_as_they_are(monkeypatch):
    seen = []
    guarded(seen).post("http://127.0.0.1:9/h", content=json.dumps({}))
    assert str(seen[0].url) == "http://127.0.0.1:9/h"


@pytest.mark.parametrize("url", ["http://localhost./x", "http://LOCALHOST./x",
                                 "http://ip6-localhost/x", "http://localhost.localdomain/x"])
def test_other_names_of_this_machine_are_refused_on_save(guard, url):
    with pytest.raises(ValueError, match="is this machine"):
        check_url(url)


def test_a_name_that_resolves_to_a_private_address_is_refused_on_save(guard, monkeypatch):
    fake_dns(monkeypatch, "10.0.0.7")
    with pytest.raises(ValueError, match="resolves to a non-public address 10.0.0.7"):
        check_url("https://hooks.example.com/cr")


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999/x", "http://x.test:0/x"])
def test_ports_out_of_range_are_refused(url):
    with pytest.raises(ValueError):
        check_url(url)
