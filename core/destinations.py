"""Where notifications may go: the SSRF guard.

With the guard on (``CRONRADAR_BLOCK_PRIVATE_ADDRESSES``, on by default under
``CRONRADAR_ENV=production``) a notification only reaches public addresses:

- on save, :func:`check_url` refuses URLs whose host is a non-public address in
  any spelling (``127.1``, ``0x7f000001``, ``[::ffff:127.0.0.1]``,
  ``169.254.169.254``, IPv6 forms that embed an IPv4 address such as
  ``[::127.0.0.1]``, ``[64:ff9b::7f00:1]``, ``2002:7f00:1::1``) or ``localhost``;
  with the guard off it still refuses control characters and hosts that are not
  valid IDNA;
- at send time, :class:`GuardedTransport` resolves the host once, refuses it if
  any address it resolves to is not public, and connects to the address it
  checked (the URL's host replaced by it; the ``Host`` header and the TLS server
  name, used for SNI and the certificate check, stay the name), so DNS cannot
  answer differently between the check and the connection.

``CRONRADAR_ALLOWED_DESTINATIONS`` lists hosts and networks that are allowed
anyway (an internal receiver, a test's loopback server).
"""
from __future__ import annotations

import ipaddress
import socket
from ipaddress import IPv4Address, IPv6Address
from urllib.parse import urlsplit

import httpx
from django.conf import settings

IPAddress = IPv4Address | IPv6Address
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_6TO4 = ipaddress.ip_network("2002::/16")
_COMPATIBLE = ipaddress.ip_network("::/96")
URL_MAX = 2048


class BlockedDestination(Exception):
    """The destination is an address notifications may not reach."""


def guard_on() -> bool:
    return settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES


def literal_address(host: str) -> IPAddress | None:
    """The address a URL host spells, in any form the resolver would accept
    (``127.1``, ``0x7f000001``, ``2130706433``, ``::1``), else None (a name)."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if host and all(c in "0123456789abcdefxABCDEFX." for c in host):
        try:
            return IPv4Address(socket.inet_aton(host))  # the classic BSD forms
        except OSError:
            return None
    return None


def embedded_ipv4(address: IPAddress) -> tuple[list[IPv4Address], bool]:
    """IPv4 addresses an IPv6 address carries (mapped, compatible, NAT64, 6to4,
    Teredo), and whether the IPv6 address is only a wrapper of them (mapped,
    compatible, NAT64: the IPv4 address is what is reached)."""
    if address.version == 4:
        return [], False
    if address.ipv4_mapped:
        return [address.ipv4_mapped], True
    if any(address in net for net in _NAT64) or (
            address in _COMPATIBLE and int(address) > 1):
        return [IPv4Address(int(address) & 0xFFFFFFFF)], True
    if address in _6TO4:
        return [address.sixtofour], False
    if address.teredo:
        return list(address.teredo), False
    return [], False


def blocked_reason(address: IPAddress) -> str | None:
    """Why ``address`` (or an IPv4 address it embeds) is not public, or None."""
    inner, wrapper = embedded_ipv4(address)
    for a in inner if wrapper else [*inner, address]:
        if not a.is_global or a.is_multicast or a.is_reserved or a.is_unspecified:
            return f"non-public address {a}"
    return None


def allowed(host: str, address: IPAddress | None = None) -> bool:
    """Whether ``CRONRADAR_ALLOWED_DESTINATIONS`` lets ``host`` / ``address`` through."""
    for entry in settings.CRONRADAR_ALLOWED_DESTINATIONS:
        if entry.lower() == host.lower():
            return True
        if address is not None:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                continue
    return False


def check_url(url: str) -> str:
    """The URL to store for a channel, or ``ValueError`` with the reason.

    Refuses URLs longer than 2,048 characters, with control characters or
    whitespace, that httpx cannot parse (including hosts that are not valid IDNA),
    and, with the guard on, hosts that are non-public addresses or ``localhost``.
    """
    if len(url) > URL_MAX:
        raise ValueError(f"must be at most {URL_MAX} characters")
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise ValueError("must not contain spaces or control characters")
    try:
        port = urlsplit(url).port
        host = httpx.URL(url).host
    except (httpx.InvalidURL, UnicodeError, ValueError) as exc:
        raise ValueError(f"is not a valid URL: {exc}") from None
    if not host:
        raise ValueError("must have a host")
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(f"port {port} is not a port (1-65535)")
    if guard_on():
        name = host.lower().rstrip(".")
        address = literal_address(name)
        if allowed(name, address):
            return url
        if address is not None and (why := blocked_reason(address)):
            raise ValueError(f"{host} is a {why}; notifications only go to public addresses")
        if name in LOOPBACK_NAMES or name.endswith(".localhost"):
            raise ValueError(f"{host} is this machine; notifications only go to public addresses")
        if address is None and (why := _resolves_to_blocked(name, port or 443)):
            raise ValueError(f"{host} resolves to a {why}; notifications only go to public "
                             "addresses")
    return url


# Names that mean this machine without a DNS query (glibc's /etc/hosts defaults).
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


def _resolves_to_blocked(host: str, port: int) -> str | None:
    """Why ``host`` resolves to a non-public address now, or None (also when it
    does not resolve: the check at send time refuses it later if it must)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return None
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not allowed(host, address) and (why := blocked_reason(address)):
            return why
    return None


def resolve(host: str, port: int) -> str:
    """The address to connect to for ``host``: checked, when the guard is on.

    Raises :class:`BlockedDestination` if the host is, or resolves to, any
    non-public address (one is enough: a name with a private address beside a
    public one is refused), and ``OSError`` (``socket.gaierror``) if it does not
    resolve.
    """
    address = literal_address(host)
    if address is not None:
        if not allowed(host, address) and (why := blocked_reason(address)):
            raise BlockedDestination(f"{host} is a {why}")
        return str(address)
    addresses = [ipaddress.ip_address(info[4][0]) for info in
                 socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]
    if not allowed(host):
        for address in addresses:
            if not allowed(host, address) and (why := blocked_reason(address)):
                raise BlockedDestination(f"{host} resolves to {why}")
    return str(addresses[0])


class GuardedTransport(httpx.BaseTransport):
    """An httpx transport that, with the guard on, sends each request to the
    address :func:`resolve` checked (``inner`` does the HTTP)."""

    def __init__(self, inner: httpx.BaseTransport):
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if guard_on():
            host = request.url.host
            port = request.url.port or (443 if request.url.scheme == "https" else 80)
            target = resolve(host, port)
            if target != host:
                if request.url.scheme == "https":
                    request.extensions = {**request.extensions, "sni_hostname": host}
                request.url = request.url.copy_with(host=target)  # Host header unchanged
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()
