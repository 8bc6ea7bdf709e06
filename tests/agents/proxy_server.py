"""A tiny HTTP proxy on 127.0.0.1: `CONNECT` tunnels and absolute-URI forwarding.

It records what went through it (`requests`: the request line's method and target, and the
headers it saw), so tests can tell a request that reached the proxy from one that bypassed it.
"""

from __future__ import annotations

import select
import socket
import socketserver
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Seen:
    method: str
    target: str
    headers: dict[str, str]


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return b"", b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _pipe(a: socket.socket, b: socket.socket, seconds: float = 10) -> None:
    """Copy bytes both ways until either side closes (bounded in time)."""
    sockets = [a, b]
    while True:
        readable, _, _ = select.select(sockets, [], [], seconds)
        if not readable:
            return
        for sock in readable:
            data = sock.recv(65536)
            if not data:
                return
            (b if sock is a else a).sendall(data)


class ProxyServer:
    """`with ProxyServer() as proxy:`; `proxy.url` is `http://127.0.0.1:PORT`."""

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        outer = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                client: socket.socket = self.request
                head, rest = _read_head(client)
                if not head:
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                outer.requests.append(Seen(method, target, headers))
                if method == "CONNECT":
                    host, _, port = target.rpartition(":")
                    with socket.create_connection((host, int(port)), timeout=10) as upstream:
                        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                        _pipe(client, upstream)
                    return
                # Absolute-URI forwarding: one request per connection, then close.
                url = urlsplit(target)
                length = int(headers.get("content-length", "0"))
                while len(rest) < length:
                    chunk = client.recv(65536)
                    if not chunk:
                        break
                    rest += chunk
                path = url.path + (f"?{url.query}" if url.query else "")
                kept = [
                    line
                    for line in lines[1:]
                    if not line.lower().startswith(("proxy-", "connection:"))
                ]
                request = "\r\n".join([f"{method} {path} HTTP/1.1", *kept, "Connection: close"])
                with socket.create_connection((url.hostname, url.port or 80), timeout=10) as up:
                    up.sendall(request.encode("latin-1") + b"\r\n\r\n" + rest)
                    response = b""
                    while chunk := up.recv(65536):
                        response += chunk
                client.sendall(response)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> ProxyServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
