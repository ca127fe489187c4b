"""core.transport: httpx requests on urllib3's keep-alive pools, against a real
local server that records the bytes it gets and answers from a script: the exact
request (the same bytes httpx's own transport sends), keep-alive and when a
connection is not kept, the answer's decoding, timeouts and the overall deadline,
httpx's exceptions, TLS by name to a checked address."""
import gzip
import shutil
import socket
import ssl
import subprocess
import threading
import time

import httpx
import pytest
import urllib3

from core.transport import Urllib3Transport

TIMEOUT = {"connect": 0.5, "read": 0.5, "write": 0.5, "pool": 0.5}


class Server:
    """A local HTTP/1.1 server: records each request's bytes and the connection it
    came on, answers each with the next of ``answers`` (raw bytes; None: no answer,
    hold the connection until the test ends; b"": close it). ``tls``: an SSLContext
    to serve with."""

    def __init__(self, *answers, tls: ssl.SSLContext | None = None):
        self.answers, self.tls = list(answers), tls
        self.requests: list[tuple[int, bytes]] = []  # (connection number, bytes)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        n = 0
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            n += 1
            threading.Thread(target=self._serve, args=(conn, n), daemon=True).start()

    def _serve(self, conn, n):
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            data = b""
            while True:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, data = data.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(data) < length:
                    data += conn.recv(65536)
                self.requests.append((n, head + b"\r\n\r\n" + data[:length]))
                data = data[length:]
                answer = self.answers.pop(0)
                if answer is None:
                    self.stop.wait(10)
                    return
                if not answer:
                    return  # closed without an answer
                conn.sendall(answer)
        except (OSError, ssl.SSLError):
            return
        finally:
            conn.close()

    def close(self):
        self.stop.set()
        self.listener.close()


@pytest.fixture
def server():
    made = []

    def make(*answers, tls=None):
        made.append(Server(*answers, tls=tls))
        return made[-1]

    yield make
    for s in made:
        s.close()


def ok(body=b"ok", *headers):
    return (b"HTTP/1.1 200 OK\r\n" + b"".join(h + b"\r\n" for h in headers)
            + b"Content-Length: %d\r\n\r\n" % len(body) + body)


def send(transport, url, method="POST", content=b'{"a":1}', deadline=None, **extensions):
    """(status, body) of one request through ``transport`` with httpx's client
    headers, as the sender builds it."""
    headers = httpx.Headers(httpx.Client(transport=httpx.MockTransport(lambda r: None)).headers)
    headers.update({"Content-Type": "application/json"})
    request = httpx.Request(method, url, content=content, headers=headers, extensions={
        "timeout": TIMEOUT, **({"deadline": deadline} if deadline else {}), **extensions})
    response = transport.handle_request(request)
    try:
        return response.status_code, response.read()
    finally:
        response.close()


def test_the_request_is_the_bytes_httpx_sends_and_its_connection_is_kept(server):
    s = server(ok(), ok(), ok(b"done"))
    url = f"http://127.0.0.1:{s.port}/_matrix/send/7?access=x"
    with httpx.Client(headers={"Content-Type": "application/json"}) as client:  # httpx's own
        client.put(url, content=b'{"a":1}')
    transport = Urllib3Transport()
    assert send(transport, url, "PUT") == (200, b"ok")
    assert send(transport, url, "PUT") == (200, b"done")
    (_, by_httpx), (first, ours), (second, again) = s.requests
    assert ours == by_httpx == again
    assert ours == (f"PUT /_matrix/send/7?access=x HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n"
                    "Accept: */*\r\nAccept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n"
                    f"User-Agent: python-httpx/{httpx.__version__}\r\n"
                    "Content-Type: application/json\r\nContent-Length: 7\r\n\r\n"
                    '{"a":1}').encode()
    assert first == second  # one connection for both


def test_an_answer_left_unread_closes_its_connection(server):
    s = server(ok(b"x" * 100_000), ok())
    transport = Urllib3Transport()
    request = httpx.Request("POST", f"http://127.0.0.1:{s.port}/h", content=b"{}",
                            extensions={"timeout": TIMEOUT})
    response = transport.handle_request(request)
    assert next(response.iter_bytes())[:1] == b"x"
    response.close()
    assert send(transport, f"http://127.0.0.1:{s.port}/h") == (200, b"ok")
    assert [n for n, _ in s.requests] == [1, 2]


def test_a_chunked_gzipped_answer_is_decoded(server):
    body = gzip.compress(b"busy, come back later")
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    s = server(b"HTTP/1.1 503 Service Unavailable\r\nContent-Encoding: gzip\r\n"
               b"Transfer-Encoding: chunked\r\nRetry-After: 30\r\n\r\n" + chunked)
    request = httpx.Request("POST", f"http://127.0.0.1:{s.port}/h", content=b"{}",
                            extensions={"timeout": TIMEOUT})
    response = Urllib3Transport().handle_request(request)
    assert (response.status_code, response.headers["retry-after"], response.read()) == (
        503, "30", b"busy, come back later")


def test_a_redirect_is_answered_not_followed(server):
    s = server(b"HTTP/1.1 302 Found\r\nLocation: http://169.254.169.254/\r\n"
               b"Content-Length: 0\r\n\r\n")
    assert send(Urllib3Transport(), f"http://127.0.0.1:{s.port}/h") == (302, b"")
    assert len(s.requests) == 1


def test_an_answer_that_never_comes_is_a_read_timeout(server):
    s = server(None)
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        send(Urllib3Transport(), f"http://127.0.0.1:{s.port}/h")
    assert 0.5 <= time.monotonic() - started < 1.5


def test_a_trickled_answer_ends_at_the_deadline(server):
    """Each read waits at most the read timeout, and none past the deadline: a body
    sent a byte every 0.2 s (each read well within 0.5 s) ends at 1 s."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle():
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
            while not stop.wait(0.2):
                conn.sendall(b"x")

    threading.Thread(target=trickle, daemon=True).start()
    started = time.monotonic()
    try:
        with pytest.raises(httpx.ReadTimeout):
            send(Urllib3Transport(), f"http://127.0.0.1:{listener.getsockname()[1]}/h",
                 deadline=started + 1.0)
    finally:
        stop.set()
        listener.close()
    assert 1.0 <= time.monotonic() - started < 1.5


def test_a_deadline_already_passed_sends_nothing(server):
    s = server(ok())
    with pytest.raises(httpx.ConnectTimeout):
        send(Urllib3Transport(), f"http://127.0.0.1:{s.port}/h", deadline=time.monotonic())
    assert s.requests == []


def test_errors_are_httpxs_with_the_os_message():
    port = socket.create_server(("127.0.0.1", 0))
    closed = port.getsockname()[1]
    port.close()
    with pytest.raises(httpx.ConnectError, match=r"^\[Errno 111\] Connection refused$"):
        send(Urllib3Transport(), f"http://127.0.0.1:{closed}/h")
    with pytest.raises(httpx.UnsupportedProtocol):
        send(Urllib3Transport(), "ftp://127.0.0.1/h")


def test_a_peer_that_closes_without_answering_is_a_protocol_error(server):
    s = server(b"")  # reads the request, answers nothing, closes
    with pytest.raises(httpx.RemoteProtocolError):
        send(Urllib3Transport(), f"http://127.0.0.1:{s.port}/h")


@pytest.fixture
def certificate(tmp_path):
    """A self-signed certificate for hooks.test: (cert file, key file)."""
    if not shutil.which("openssl"):
        pytest.skip("no openssl command")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=hooks.test", "-addext", "subjectAltName=DNS:hooks.test",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def test_tls_to_a_checked_address_is_verified_by_name(server, certificate, monkeypatch):
    """The guard connects to the address it checked and names the host in
    ``sni_hostname``: SNI and the certificate check use the name; roots are httpx's
    (SSL_CERT_FILE here); a certificate of another name is refused."""
    cert, key = certificate
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    names = []
    tls.sni_callback = lambda sock, name, context: names.append(name)
    s = server(ok(), ok(), tls=tls)
    transport = Urllib3Transport()
    url = f"https://127.0.0.1:{s.port}/h"
    assert send(transport, url, sni_hostname="hooks.test") == (200, b"ok")
    assert names == ["hooks.test"]
    assert s.requests[0][1].startswith(b"POST /h HTTP/1.1\r\nHost: 127.0.0.1:")
    with pytest.raises(httpx.ConnectError, match="certificate verify failed"):
        send(transport, url, sni_hostname="other.test")
    with pytest.raises(httpx.ConnectError, match="certificate verify failed"):
        send(Urllib3Transport(), url)  # by address: the certificate names no address


def test_a_repeated_header_goes_out_on_each_of_its_lines(server):
    s = server(ok())
    url = f"http://127.0.0.1:{s.port}/hook"
    request = httpx.Request("POST", url, content=b"x", headers=[
        ("X-Tag", "a"), ("Content-Type", "text/plain"), ("x-tag", "b")],
        extensions={"timeout": TIMEOUT})
    response = Urllib3Transport().handle_request(request)
    response.read()
    response.close()
    ((_, sent),) = s.requests  # each line under the name's first spelling
    assert sent == ("POST /hook HTTP/1.1\r\nAccept-Encoding: identity\r\n"
                    f"User-Agent: python-urllib3/{urllib3.__version__}\r\n"
                    f"Host: 127.0.0.1:{s.port}\r\nX-Tag: a\r\nX-Tag: b\r\n"
                    "Content-Type: text/plain\r\nContent-Length: 1\r\n\r\nx").encode()
