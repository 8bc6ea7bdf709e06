"""Loopback servers for `smoke_http.py`, from the standard library alone.

- `ApiServer`: answers the OpenAI chat-completions and Anthropic messages wire formats,
  over plain HTTP or TLS, and records every request (its path, whether it carried the key,
  and whether `ProxyServer` forwarded it).
- `ProxyServer`: a threaded HTTP proxy — absolute-URI forwarding for `http://` and
  `CONNECT` tunnels for `https://` — optionally behind basic credentials, recording every
  request line it was sent, so a smoke can tell a request that went through it from one
  that bypassed it.
- `make_authority`: a throwaway certificate authority and a server certificate for
  127.0.0.1 signed by it, made with the `openssl` command (a plain install of tui-eval
  brings neither trustme nor the cryptography package).
"""

from __future__ import annotations

import base64
import http.client
import json
import select
import shutil
import socket
import ssl
import subprocess
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

KEY = "sk-smoke-0123456789"
"""The API key the API server expects, as a bearer token or Anthropic's `x-api-key`."""
VIA = "1.1 tui-eval-smoke-proxy"
"""The `Via` header `ProxyServer` adds to what it forwards."""
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "content-length",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
_TUNNEL_IDLE_S = 30.0
"""A tunnel left idle this long is closed (a guard: clients close theirs on exit)."""


def basic_credentials(user: str, password: str) -> str:
    """The `Proxy-Authorization` value for `user:password`."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@dataclass(frozen=True)
class ApiHit:
    """One request the API server answered."""

    path: str
    authorized: bool
    via: str | None


@dataclass(frozen=True)
class ProxyHit:
    """One request line a proxy was sent (CONNECT or a forwarded request)."""

    method: str
    target: str
    proxy_authorization: str | None


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler], owner: _Loopback) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.owner = owner

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that refuses our certificate breaks off the handshake: expected in
        # one scenario, and recorded rather than printed as a traceback.
        import sys

        self.owner.errors.append(repr(sys.exc_info()[1]))


class _Loopback:
    """A threaded server on 127.0.0.1 that records what it was sent; `with` runs it."""

    scheme = "http"

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = _Server(handler, self)
        self.port: int = self.httpd.server_address[1]
        self.errors: list[str] = []
        """Errors in handling a connection (a refused certificate breaks off a handshake)."""
        self._seen: list[Any] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def record(self, hit: Any) -> None:
        with self._lock:
            self._seen.append(hit)

    def take(self) -> list[Any]:
        """What was recorded since the last `take()` (and forget it)."""
        with self._lock:
            seen, self._seen = self._seen, []
        return seen

    def __enter__(self) -> Any:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _ApiHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real APIs
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        question = str(body["messages"][-1]["content"])
        answer = question.replace("question", "answer")
        reply: dict[str, Any] = {}
        if self.path == "/v1/chat/completions":
            ok = self.headers.get("authorization") == f"Bearer {KEY}"
            reply = {
                "id": "chatcmpl-smoke",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2},
            }
        elif self.path == "/v1/messages":
            ok = self.headers.get("x-api-key") == KEY and bool(
                self.headers.get("anthropic-version")
            )
            reply = {
                "id": "msg_smoke",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [{"type": "text", "text": answer}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 5, "output_tokens": 2},
            }
        else:
            ok = False
        self.server.owner.record(ApiHit(self.path, ok, self.headers.get("via")))
        if not ok:
            reply = {"error": {"message": f"unexpected request to {self.path}"}}
        data = json.dumps(reply).encode()
        self.send_response(200 if ok else 401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class ApiServer(_Loopback):
    """An OpenAI-compatible and Anthropic API on 127.0.0.1 (`/v1/chat/completions`,
    `/v1/messages`); over TLS when given a server context."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        super().__init__(_ApiHandler)
        if tls is not None:
            self.scheme = "https"
            # The handshake happens in the request's thread, not in the accepting one.
            self.httpd.socket = tls.wrap_socket(
                self.httpd.socket, server_side=True, do_handshake_on_connect=False
            )

    def take(self) -> list[ApiHit]:
        return super().take()


def _pipe(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until either side closes."""
    while True:
        readable, _, _ = select.select([a, b], [], [], _TUNNEL_IDLE_S)
        if not readable:
            return
        for sock in readable:
            data = sock.recv(65536)
            if not data:
                return
            (b if sock is a else a).sendall(data)


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def _admitted(self) -> bool:
        proxy: ProxyServer = self.server.owner  # type: ignore[assignment]
        given = self.headers.get("proxy-authorization")
        proxy.record(ProxyHit(self.command, self.path, given))
        if proxy.expected is None or given == proxy.expected:
            return True
        self._fail(407, 'Basic realm="smoke"')
        return False

    def _fail(self, status: int, authenticate: str | None = None) -> None:
        self.send_response(status)
        if authenticate:
            self.send_header("Proxy-Authenticate", authenticate)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def do_CONNECT(self) -> None:
        if not self._admitted():
            return
        host, _, port = self.path.rpartition(":")
        try:
            upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
        except (OSError, ValueError):
            self._fail(502)
            return
        with upstream:
            self.send_response(200, "Connection established")
            self.end_headers()
            _pipe(self.connection, upstream)
        self.close_connection = True

    def do_POST(self) -> None:
        if not self._admitted():
            return
        url = urlsplit(self.path)
        if (
            url.scheme != "http"
            or not url.hostname
            or "chunked" in str(self.headers.get("transfer-encoding"))
        ):
            self._fail(400)
            return
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["Via"] = VIA
        upstream = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=10)
        try:
            upstream.request(
                "POST", url.path + (f"?{url.query}" if url.query else ""), body, headers
            )
            response = upstream.getresponse()
            data = response.read()
        except OSError:
            self._fail(502)
            return
        finally:
            upstream.close()
        self.send_response(response.status)
        for name, value in response.getheaders():
            if name.lower() not in _HOP_BY_HOP | {"server", "date"}:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class ProxyServer(_Loopback):
    """An HTTP proxy on 127.0.0.1 that records every request line it is sent.

    Args:
        credentials: `(user, password)` it requires as `Proxy-Authorization` (else 407).
    """

    def __init__(self, credentials: tuple[str, str] | None = None) -> None:
        super().__init__(_ProxyHandler)
        self.expected = basic_credentials(*credentials) if credentials else None

    def take(self) -> list[ProxyHit]:
        return super().take()


@dataclass(frozen=True)
class Authority:
    """A throwaway CA (`ca_file`, PEM) and a TLS server context whose certificate, for
    IP 127.0.0.1, that CA signed."""

    ca_file: Path
    server_context: ssl.SSLContext


_OPENSSL_CONFIG = """\
[req]
distinguished_name = name
prompt = no
[name]
CN = tui-eval smoke
[authority]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
"""


def make_authority(folder: Path) -> Authority:
    """A CA and a 127.0.0.1 server certificate in `folder`, made with `openssl`.

    Raises:
        SystemExit: no `openssl` command, or it failed (its error shown).
    """
    openssl = shutil.which("openssl")
    if openssl is None:
        raise SystemExit(
            "smoke: the HTTPS scenarios need the `openssl` command to make a test CA "
            "(apt-get install openssl, brew install openssl)"
        )
    config = folder / "openssl.cnf"
    config.write_text(_OPENSSL_CONFIG)
    ca_key, ca_file = folder / "ca.key", folder / "ca.pem"
    key, request, certificate = folder / "server.key", folder / "server.csr", folder / "server.pem"
    new_key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    common = ["-config", str(config)]
    authority_step = ["req", "-x509", *common, *new_key, "-extensions", "authority"]
    authority_step += ["-days", "2", "-subj", "/CN=tui-eval smoke CA"]
    request_step = ["req", "-new", *common, *new_key, "-subj", "/CN=127.0.0.1"]
    signing_step = ["x509", "-req", "-in", str(request), "-CA", str(ca_file), "-CAkey", str(ca_key)]
    signing_step += ["-set_serial", "1", "-days", "2", "-extfile", str(config), "-extensions"]
    steps = [
        [*authority_step, "-keyout", str(ca_key), "-out", str(ca_file)],
        [*request_step, "-keyout", str(key), "-out", str(request)],
        [*signing_step, "server", "-out", str(certificate)],
    ]
    for step in steps:
        done = subprocess.run([openssl, *step], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise SystemExit(f"smoke: openssl {step[0]} failed: {done.stderr.strip()}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    return Authority(ca_file, context)
