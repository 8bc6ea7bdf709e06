"""Where users sit: proxies from the environment, trust stores, under asyncio and trio.

What a plain install (no extras, no trio) does over real HTTP through proxies and TLS is
`scripts/smoke_http.py`, which `.ci/run` runs in a fresh virtualenv under both loops."""

from __future__ import annotations

import socket
import ssl
import sys
import threading
import time

import httpx2
import pytest

from tui_eval.agents.http.sockets import proxy_for as proxy_of
from tui_eval.agents.messages import Message
from tui_eval.agents.providers import ProviderError
from tui_eval.agents.providers.anthropic import AnthropicProvider
from tui_eval.agents.providers.openai import OpenAIProvider

from .proxy_server import ProxyServer
from .wire_server import Reply, WireServer, anthropic_text, openai_text

pytestmark = pytest.mark.anyio

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Every network test runs under asyncio (aiohttp's sockets) and trio (httpx2's)."""
    if request.param == "trio":
        pytest.importorskip("trio")
    return str(request.param)


def proxy_for(url: str) -> httpx2.Proxy | None:
    """The proxy the environment names for `url`, as tui-eval's layer routes it."""
    return proxy_of(httpx2.URL(url))


@pytest.fixture(autouse=True)
def _no_proxy_from_the_machine(monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


async def ask(provider: OpenAIProvider) -> str | None:
    completion = await provider.complete([Message("user", "hi")], [])
    await provider.aclose()
    return completion.content


async def test_http_proxy_forwards_plain_http_requests(monkeypatch):
    with WireServer() as server, ProxyServer() as proxy:
        server.reply(Reply(body=openai_text("via proxy")))
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        provider = OpenAIProvider("m", base_url=server.url + "/v1", api_key="sk-test")
        assert await ask(provider) == "via proxy"
    assert [(r.method, r.target) for r in proxy.requests] == [
        ("POST", server.url + "/v1/chat/completions")
    ]
    assert server.requests[0].path == "/v1/chat/completions"


async def test_lower_case_proxy_variables_and_proxy_credentials(monkeypatch):
    with WireServer() as server, ProxyServer() as proxy:
        server.reply(Reply(body=openai_text("ok")))
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
        monkeypatch.setenv("http_proxy", proxy.url.replace("http://", "http://me:p%40ss@"))
        provider = OpenAIProvider("m", base_url=server.url + "/v1")
        assert await ask(provider) == "ok"
    # me:p@ss, base64-encoded; and never passed on to the API.
    assert proxy.requests[0].headers["proxy-authorization"] == "Basic bWU6cEBzcw=="
    assert "proxy-authorization" not in {k.lower() for k in server.requests[0].headers}


async def test_plain_http_never_loads_the_trust_store(anyio_backend, monkeypatch):
    """A local server over plain HTTP works whatever `SSL_CERT_FILE` says: the trust store
    (tens of milliseconds to load, before the first request could leave) is read only for
    a request that uses TLS."""
    monkeypatch.setenv("SSL_CERT_FILE", "/nonexistent/ca.pem")
    with WireServer() as server:
        server.reply(Reply(body=openai_text("plain")))
        assert await ask(OpenAIProvider("m", base_url=server.url + "/v1")) == "plain"


async def test_https_proxy_tunnels_with_connect(tmp_path, monkeypatch):
    trustme = pytest.importorskip("trustme")
    authority = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(ca_file))
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    authority.issue_cert("127.0.0.1").configure_cert(server_context)
    with WireServer() as server, ProxyServer() as proxy:
        server.httpd.socket = server_context.wrap_socket(server.httpd.socket, server_side=True)
        server.reply(Reply(body=openai_text("tunnelled")), Reply(body=openai_text("again")))
        server.reply(Reply(body=anthropic_text("tunnelled too")))
        monkeypatch.setenv("HTTPS_PROXY", proxy.url.replace("http://", "http://me:pw@"))
        base = server.url.replace("http://", "https://") + "/v1"
        provider = OpenAIProvider("m", base_url=base, api_key="sk-secret")
        assert await ask(provider) == "tunnelled"
        assert await ask(provider) == "again"
        anthropic = AnthropicProvider("c", base_url=base.removesuffix("/v1"), api_key="sk-a")
        assert await ask(anthropic) == "tunnelled too"
    host_port = server.url.removeprefix("http://")
    assert [r.method for r in proxy.requests] == ["CONNECT"] * len(proxy.requests)
    assert {r.target for r in proxy.requests} == {host_port}
    assert proxy.requests[0].headers["proxy-authorization"] == "Basic bWU6cHc="  # me:pw
    # The proxy saw only the CONNECT line: the key went inside the TLS tunnel.
    assert all("authorization" not in r.headers for r in proxy.requests)
    assert server.requests[0].headers["Authorization"] == "Bearer sk-secret"


@pytest.mark.parametrize("no_proxy", ["127.0.0.1", "localhost,127.0.0.1", "*"])
async def test_no_proxy_bypasses_the_proxy(monkeypatch, no_proxy):
    with WireServer() as server, ProxyServer() as proxy:
        server.reply(Reply(body=openai_text("direct")))
        port = server.url.rsplit(":", 1)[1]
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", no_proxy.replace("PORT", f"127.0.0.1:{port}"))
        provider = OpenAIProvider("m", base_url=server.url + "/v1")
        assert await ask(provider) == "direct"
    assert proxy.requests == []


def test_which_variable_applies_to_which_url(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    assert proxy_for("http://api.example/v1") is None  # HTTPS_PROXY is for https only
    chosen = proxy_for("https://api.example/v1")
    assert chosen is not None and chosen.url.host == "proxy.corp" and chosen.url.port == 3128
    monkeypatch.setenv("ALL_PROXY", "http://all.corp:8080")
    all_proxy = proxy_for("http://api.example/v1")
    assert all_proxy is not None and all_proxy.url.host == "all.corp"
    monkeypatch.setenv("NO_PROXY", "api.example")
    assert proxy_for("https://api.example/v1") is None


async def test_a_socks_proxy_is_a_clear_error_naming_it_without_its_password(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "socks5://me:hunter2@127.0.0.1:1080")
    provider = OpenAIProvider("m", base_url="https://api.example/v1")
    with pytest.raises(ProviderError) as caught:
        await provider.complete([Message("user", "hi")], [])
    message = str(caught.value)
    assert "socks5://***@127.0.0.1:1080" in message and "not SOCKS" in message
    assert "hunter2" not in message


@pytest.mark.parametrize("password", ["hunter2#x", "hunter2/x", "hunter2?x"])
async def test_a_proxy_password_a_url_parser_would_misread_never_shows(monkeypatch, password):
    """`#`, `/` or `?` in a password made the URL parser take it for the host's port."""
    monkeypatch.setenv("HTTP_PROXY", f"http://alice:{password}@127.0.0.1:1")
    provider = OpenAIProvider("m", base_url="http://api.example/v1", max_retries=0)
    with pytest.raises(ProviderError) as caught:
        await provider.complete([Message("user", "hi")], [])
    assert "hunter2" not in str(caught.value) and "HTTP_PROXY" in str(caught.value)


async def test_a_proxy_token_never_shows_in_errors(monkeypatch):
    """A bare token as the proxy URL's user is a credential too (reports store the error)."""
    monkeypatch.setenv("HTTPS_PROXY", "http://sk-proxy-SECRET-token@127.0.0.1:1")
    provider = OpenAIProvider("m", base_url="https://api.example/v1", api_key="k", max_retries=0)
    with pytest.raises(ProviderError) as caught:
        await provider.complete([Message("user", "hi")], [])
    assert "127.0.0.1:1" in str(caught.value) and "SECRET" not in str(caught.value)


async def test_credentials_in_base_url_are_sent_as_basic_auth_and_never_shown():
    with WireServer() as server:
        server.reply(Reply(body=openai_text("ok")), Reply(401, {"error": {"message": "no"}}))
        base = server.url.replace("http://", "http://bob:s3cret-pw@") + "/v1"
        provider = OpenAIProvider("m", base_url=base)
        assert await ask(provider) == "ok"
        with pytest.raises(ProviderError) as caught:
            await provider.complete([Message("user", "hi")], [])
    assert server.requests[0].headers["Authorization"] == "Basic Ym9iOnMzY3JldC1wdw=="
    assert "s3cret" not in str(caught.value) and "s3cret" not in repr(provider)


async def test_an_ipv6_origin_is_bracketed_in_connect(monkeypatch, anyio_backend):
    if anyio_backend == "trio":
        pytest.skip("httpcore2 2.16 writes CONNECT ::1:8443 without brackets (its bug)")
    seen: list[bytes] = []
    listening = socket.create_server(("127.0.0.1", 0))

    def refuse() -> None:
        listening.settimeout(10)
        try:
            conn, _ = listening.accept()
        except OSError:
            return
        with conn:
            seen.append(conn.recv(65536))
            conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=refuse, daemon=True).start()
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{listening.getsockname()[1]}")
    provider = OpenAIProvider("m", base_url="https://[::1]:8443/v1", max_retries=0)
    with pytest.raises(ProviderError, match="403"):
        await provider.complete([Message("user", "hi")], [])
    listening.close()
    assert seen[0].startswith(b"CONNECT [::1]:8443 HTTP/1.1\r\n")


@pytest.mark.skipif(sys.platform != "linux", reason="macOS and Windows use truststore")
async def test_without_ssl_cert_file_the_systems_ca_bundle_is_trusted(tmp_path, monkeypatch):
    """A CA that IT added to the system's bundle is trusted, with no variable set."""
    trustme = pytest.importorskip("trustme")
    authority = trustme.CA()
    bundle = tmp_path / "system-bundle.pem"
    authority.cert_pem.write_to_path(str(bundle))
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    # Where this Python's OpenSSL was built to look: here, the bundle with IT's CA.
    real = ssl.get_default_verify_paths()
    monkeypatch.setattr(
        ssl,
        "get_default_verify_paths",
        lambda: real._replace(openssl_cafile=str(bundle), openssl_capath=str(tmp_path / "none")),
    )
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    authority.issue_cert("127.0.0.1").configure_cert(server_context)
    with WireServer() as server:
        server.httpd.socket = server_context.wrap_socket(server.httpd.socket, server_side=True)
        server.reply(Reply(body=openai_text("trusted")))
        base = server.url.replace("http://", "https://") + "/v1"
        assert await ask(OpenAIProvider("m", base_url=base)) == "trusted"


async def test_a_server_nobody_trusts_is_refused(tmp_path, monkeypatch):
    trustme = pytest.importorskip("trustme")
    authority = trustme.CA()  # not written anywhere a client looks
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    other = trustme.CA()
    ca_file = tmp_path / "other.pem"
    other.cert_pem.write_to_path(str(ca_file))
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))  # SSL_CERT_FILE wins: only it is trusted
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    authority.issue_cert("127.0.0.1").configure_cert(server_context)
    with WireServer() as server:
        server.httpd.socket = server_context.wrap_socket(server.httpd.socket, server_side=True)
        base = server.url.replace("http://", "https://") + "/v1"
        provider = OpenAIProvider("m", base_url=base, backoff=5.0)  # a retry would wait 5 s
        started = time.monotonic()
        with pytest.raises(ProviderError, match="certificate") as caught:
            await provider.complete([Message("user", "hi")], [])
        await provider.aclose()
    # Never retried: a certificate does not fix itself.
    assert "attempt" not in str(caught.value) and time.monotonic() - started < 5


async def test_a_proxy_that_closes_during_connect_is_named(monkeypatch):
    listening = socket.create_server(("127.0.0.1", 0))

    def hang_up() -> None:
        listening.settimeout(10)
        try:
            conn, _ = listening.accept()
        except OSError:
            return
        conn.recv(65536)
        conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{listening.getsockname()[1]}")
    provider = OpenAIProvider("m", base_url="https://api.example/v1", max_retries=0)
    with pytest.raises(ProviderError, match="api.example"):
        await provider.complete([Message("user", "hi")], [])
    listening.close()


@pytest.mark.parametrize(
    ("no_proxy", "url", "bypassed"),
    [
        ("*", "https://a.com", True),
        ("example.com", "https://example.com", True),
        ("example.com", "https://api.example.com", True),
        ("example.com", "https://notexample.com", False),
        ("127.0.0.1", "https://127.0.0.1:8443", True),
        ("127.0.0.1", "https://127.0.0.2", False),
        ("::1", "https://[::1]:8443", True),
        ("", "https://a.com", False),
    ],
)
def test_no_proxy_entries_as_httpx2_reads_them(monkeypatch, no_proxy, url, bypassed):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", no_proxy)
    assert (proxy_for(url + "/v1") is None) is bypassed
