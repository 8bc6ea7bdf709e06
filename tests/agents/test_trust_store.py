"""A bad `SSL_CERT_FILE` is an error that names the variable and the file, sent nowhere —
and only for a request that uses TLS: plain HTTP never loads the trust store, under
asyncio (aiohttp's sockets) and trio (httpx2's) alike."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tui_eval.agents.http.sockets import TrustStoreError
from tui_eval.agents.messages import Message
from tui_eval.agents.providers.openai import OpenAIProvider

from .wire_server import Reply, WireServer, openai_text

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    if request.param == "trio":
        pytest.importorskip("trio")
    return str(request.param)


@pytest.fixture(autouse=True)
def _no_proxy_from_the_machine(monkeypatch) -> Iterator[None]:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    yield


async def ask(base_url: str) -> str | None:
    provider = OpenAIProvider("gpt-4o-mini", base_url=base_url, api_key="sk-x")
    try:
        completion = await provider.complete([Message("user", "hi")], [])
    finally:
        await provider.aclose()
    return completion.content


def assert_names_the_file(error: BaseException, missing: Path) -> None:
    text = str(error)
    assert isinstance(error, TrustStoreError), repr(error)
    assert f"SSL_CERT_FILE='{missing}'" in text, text
    assert "No such file" in text


async def test_a_missing_ssl_cert_file_is_named_in_the_error(
    anyio_backend, tmp_path, monkeypatch
) -> None:
    missing = tmp_path / "no-such-ca.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    with pytest.raises(Exception) as error:
        await ask("https://127.0.0.1:9/v1")
    assert_names_the_file(error.value, missing)


async def test_plain_http_works_and_the_first_tls_request_names_the_file(
    anyio_backend, tmp_path, monkeypatch
) -> None:
    """Bug: under trio the trust store was loaded when the socket transport was made, so a
    wrong `SSL_CERT_FILE` failed even a request to a local server over plain HTTP."""
    missing = tmp_path / "no-such-ca.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    with WireServer() as server:
        server.reply(Reply(body=openai_text("plain")), Reply(body=openai_text("again")))
        assert await ask(server.url + "/v1") == "plain"
        # The same connections (the process's, outside a run) then meet TLS.
        with pytest.raises(Exception) as error:
            await ask("https://127.0.0.1:9/v1")
        assert_names_the_file(error.value, missing)
        assert await ask(server.url + "/v1") == "again"


async def test_an_https_proxy_loads_the_trust_store_for_a_plain_http_url(
    anyio_backend, tmp_path, monkeypatch
) -> None:
    """The proxy's own connection is TLS: its certificate is verified with the same trust
    store, so a bad `SSL_CERT_FILE` is named there too."""
    missing = tmp_path / "no-such-ca.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    monkeypatch.setenv("HTTP_PROXY", "https://127.0.0.1:9")
    with pytest.raises(Exception) as error:
        await ask("http://127.0.0.1:9/v1")
    assert_names_the_file(error.value, missing)
