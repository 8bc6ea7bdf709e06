"""A bad `SSL_CERT_FILE` is an error that names the variable and the file, sent nowhere."""

from __future__ import annotations

import pytest

from tui_eval.agents.messages import Message
from tui_eval.agents.providers.openai import OpenAIProvider

pytestmark = pytest.mark.anyio


async def test_a_missing_ssl_cert_file_is_named_in_the_error(tmp_path, monkeypatch) -> None:
    missing = tmp_path / "no-such-ca.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    provider = OpenAIProvider("gpt-4o-mini", base_url="https://127.0.0.1:9/v1", api_key="sk-x")
    with pytest.raises(Exception) as error:
        await provider.complete([Message("user", "hi")], [])
    text = str(error.value)
    assert f"SSL_CERT_FILE='{missing}'" in text, text
    assert "No such file" in text
