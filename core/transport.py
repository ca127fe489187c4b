"""The HTTP transport notifications go out on: an httpx transport on urllib3's
connection pools.

httpx's client API stays (the request it builds: method, URL, headers, body;
redirects not followed; the answer's content decoding; the SSRF guard,
:class:`core.destinations.GuardedTransport`, in front; tests' ``MockTransport``;
OpenTelemetry's httpx instrumentation), but the HTTP/1.1 connections are urllib3's
(``http.client``'s C-accelerated header parsing, one lock-free queue of idle
connections per host). httpx's client and its own transport (httpcore's pool,
h11's parser) cost 1.4-1.8 ms of CPU per request shared by 32 sender threads
where an httpx request on this transport costs 0.55-0.8 ms
(``bench/http_clients.py``, bench/README.md).

What it keeps of httpx's transport: TLS verified with httpx's context (certifi's
roots, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``); the ``sni_hostname`` extension
(the name the guard connected by address for: SNI and the certificate check);
the ``timeout`` extension's ``connect`` and ``read`` (each connect, write and
read); httpx's exceptions (``ConnectError``, ``ConnectTimeout``,
``ReadTimeout``, ``ReadError``, ``RemoteProtocolError``), whose class names the
delivery errors quote. What it adds: the ``deadline`` extension, a
``time.monotonic()`` by which the whole exchange must be done: every read of the
status line, headers and body waits at most until then, so a receiver that
trickles its answer a byte at a time cannot hold a sender thread past it
(``ReadTimeout``, or ``ConnectTimeout`` when it passed before connecting).
"""
from __future__ import annotations

import http.client
import io
import socket
import threading
import time

import httpx
import urllib3
from urllib3 import connection as u3connection
from urllib3 import connectionpool
from urllib3 import exceptions as u3

_attempt = threading.local()  # .end: the deadline of the request this thread is making


class _DeadlineIO(io.RawIOBase):
    """A socket's reads, each waiting at most its read timeout and never past ``end``."""

    def __init__(self, sock: socket.socket, end: float):
        self.sock, self.end = sock, end
        self.step = sock.gettimeout()  # the read timeout urllib3 set
        self.inner = sock.makefile("rb", buffering=0)  # counts as an open file of the socket

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int | None:
        left = self.end - time.monotonic()
        if left <= 0:
            raise TimeoutError("the attempt's overall deadline passed")
        self.sock.settimeout(left if self.step is None else min(self.step, left))
        return self.inner.readinto(buffer)

    def close(self) -> None:
        self.inner.close()
        super().close()


class _DeadlineResponse(http.client.HTTPResponse):
    """``http.client``'s response, reading through :class:`_DeadlineIO` when the
    request has a deadline."""

    def __init__(self, sock, debuglevel=0, method=None, url=None):
        super().__init__(sock, debuglevel, method, url)
        end = getattr(_attempt, "end", None)
        if end is not None:
            self.fp.close()
            self.fp = io.BufferedReader(_DeadlineIO(sock, end))


class _HTTPConnection(u3connection.HTTPConnection):
    response_class = _DeadlineResponse


class _HTTPSConnection(u3connection.HTTPSConnection):
    response_class = _DeadlineResponse


class _HTTPPool(connectionpool.HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(connectionpool.HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


def _error(exc: Exception) -> httpx.TransportError:
    """The httpx exception httpx's own transport raises for what ``exc`` (urllib3's)
    says, with the message of the error under it (``[Errno 111] Connection refused``)."""
    cause = exc.__cause__ or exc.__context__
    if isinstance(exc, u3.ProtocolError) and len(exc.args) > 1:
        cause = exc.args[1]  # ("Connection aborted.", RemoteDisconnected(...))
    text = str(cause) if cause is not None and str(cause) else str(exc)
    if isinstance(exc, u3.NewConnectionError | u3.SSLError):  # before ConnectTimeoutError
        return httpx.ConnectError(text)
    if isinstance(exc, u3.ConnectTimeoutError):
        return httpx.ConnectTimeout(text)
    if isinstance(exc, u3.ReadTimeoutError):
        return httpx.ReadTimeout(text)
    if isinstance(exc, u3.LocationValueError):
        return httpx.UnsupportedProtocol(text)
    if isinstance(cause, ConnectionError) and not isinstance(
            cause, http.client.RemoteDisconnected):
        return httpx.ReadError(text)  # reset by the peer
    return httpx.RemoteProtocolError(text)


class _Body(httpx.SyncByteStream):
    """A urllib3 response's body as httpx reads it (raw: httpx decodes it). Closed
    before its end (the reader stopped), its connection is closed, not kept."""

    def __init__(self, response: urllib3.BaseHTTPResponse, end: float | None):
        self.response, self.end, self.whole = response, end, False

    def __iter__(self):
        try:
            while chunk := self.response.read1(65_536):
                yield chunk
            self.whole = True
        except u3.HTTPError as exc:
            raise _error(exc) from exc
        except TimeoutError as exc:  # reads that urllib3 does not wrap
            raise httpx.ReadTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpx.ReadError(str(exc)) from exc

    def close(self) -> None:
        if not self.whole:
            self.response.close()  # unread answer: the connection cannot carry another
        self.response.release_conn()


def _headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str] | urllib3.HTTPHeaderDict:
    """A request's header lines (Host and httpx's defaults among them) as urllib3
    takes them, in order: a plain dict when no name repeats (urllib3 copies the
    headers of every request: making, copying and walking an ``HTTPHeaderDict`` of
    a webhook's 12 headers costs ~16 µs, a dict ~2), else an ``HTTPHeaderDict``
    that keeps each repeated line."""
    pairs = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in raw]
    plain = dict(pairs)
    if len({name.lower() for name in plain}) == len(pairs):
        return plain
    headers = urllib3.HTTPHeaderDict()
    for name, value in pairs:
        headers.add(name, value)
    return headers


class Urllib3Transport(httpx.BaseTransport):
    """An httpx transport on urllib3's keep-alive pools: at most ``hosts``
    destinations (scheme, address, port, TLS name) keep idle connections, each
    at most ``per_host`` of them (more are opened when more requests run at once,
    and closed after). Thread-safe."""

    def __init__(self, hosts: int = 100, per_host: int = 32):
        self.pools = urllib3.PoolManager(num_pools=hosts, maxsize=per_host, block=False,
                                         retries=False, ssl_context=httpx.create_ssl_context())
        self.pools.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url, extensions = request.url, request.extensions
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol "
                                            f"'{url.scheme}://'.")
        timeouts, end = extensions.get("timeout", {}), extensions.get("deadline")
        connect, read = timeouts.get("connect"), timeouts.get("read")
        if end is not None:
            left = end - time.monotonic()
            if left <= 0:
                raise httpx.ConnectTimeout("the attempt's overall deadline passed")
            connect = left if connect is None else min(connect, left)
        sni = extensions.get("sni_hostname")
        pool = self.pools.connection_from_host(
            url.host, url.port or (443 if url.scheme == "https" else 80), url.scheme,
            pool_kwargs={"server_hostname": sni} if sni and url.scheme == "https" else None)
        headers = _headers(request.headers.raw)
        _attempt.end = end
        try:
            response = pool.urlopen(
                request.method, url.raw_path.decode("ascii"), body=request.read(),
                headers=headers, retries=False, redirect=False, assert_same_host=False,
                timeout=urllib3.Timeout(connect=connect, read=read), preload_content=False,
                decode_content=False)
        except u3.HTTPError as exc:
            raise _error(exc) from exc
        except (ValueError, http.client.HTTPException) as exc:  # a header http.client refuses
            raise httpx.LocalProtocolError(str(exc)) from exc
        finally:
            _attempt.end = None
        return httpx.Response(response.status, headers=list(response.headers.items()),
                              stream=_Body(response, end),
                              extensions={"http_version": b"HTTP/1.1",
                                          "reason_phrase": response.reason.encode("latin-1")})

    def close(self) -> None:
        self.pools.clear()
