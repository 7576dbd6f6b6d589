"""OpenAILLM's configuration: refused at construction with a ConfigurationError that says what to do."""

from __future__ import annotations

from typing import Any

import pytest

from rxvoice import LLMContext
from rxvoice.errors import ConfigurationError
from rxvoice.services import Function
from rxvoice.services.openai import DEFAULT_BASE_URL, OpenAILLM


@pytest.fixture(autouse=True)
def no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model": ""}, "model name"),
        ({"base_url": "ftp://x"}, "http"),
        ({"base_url": "localhost:8000"}, "http"),
        ({"base_url": DEFAULT_BASE_URL}, "OPENAI_API_KEY"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": float("nan")}, "timeout"),
        ({"params": {"stream": False}}, "stream"),
        ({"developer_role": "tool"}, "developer_role"),
        ({"functions": {"f": 42}}, "callable"),
        ({"functions": {"": print}}, "name"),
        ({"functions": ["f"]}, "map"),
    ],
)
def test_bad_configuration_is_refused(kwargs: dict[str, Any], match: str) -> None:
    """Each impossible setting raises ConfigurationError naming it."""
    settings: dict[str, Any] = {"model": "m", "base_url": "http://127.0.0.1:1/v1", **kwargs}
    with pytest.raises(ConfigurationError, match=match):
        OpenAILLM(**settings)


def test_function_specs_are_validated() -> None:
    """A Function needs a callable and a positive timeout."""
    with pytest.raises(ConfigurationError, match="callable"):
        Function(None)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="timeout"):
        Function(print, timeout=-1)


def test_the_environment_supplies_the_url_and_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """OPENAI_BASE_URL and OPENAI_API_KEY are used when no argument is given; the key never shows in repr."""
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    llm = OpenAILLM("m", headers={"X-Title": "rxvoice"})
    assert llm.url == "http://127.0.0.1:8000/v1/chat/completions"
    assert llm.headers["Authorization"] == "Bearer sk-secret" and llm.headers["X-Title"] == "rxvoice"
    assert "sk-secret" not in repr(llm)
    assert "Authorization" not in OpenAILLM("m", base_url="http://127.0.0.1:1/v1", api_key="").headers


def test_the_request_body_carries_the_snapshot_tools_and_params() -> None:
    """Model, stream, params, then the conversation: messages, tools and tool choice from the snapshot."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    context = LLMContext([{"role": "user", "content": "hi"}], tools=tools, tool_choice="required")
    llm = OpenAILLM("m", base_url="http://127.0.0.1:1/v1", params={"max_tokens": 50})
    assert llm.request_body(context.snapshot) == {
        "model": "m", "stream": True, "max_tokens": 50, "messages": [{"role": "user", "content": "hi"}],
        "tools": tools, "tool_choice": "required",
    }


def test_rxvoice_services_imports_the_stage_on_demand() -> None:
    """rxvoice.services.OpenAILLM is the stage class (imported lazily, so the package imports without httpx)."""
    import rxvoice.services as services

    assert services.OpenAILLM is OpenAILLM
    with pytest.raises(AttributeError):
        services.NoSuchThing  # noqa: B018
