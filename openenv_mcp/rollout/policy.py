"""Policies: what plays an episode. :class:`OpenAIPolicy` asks an OpenAI-compatible
chat-completions server; any callable ``policy(messages, tools)`` (sync or async) returning
an assistant message dict or a :class:`Turn` is a policy too."""

from __future__ import annotations

import json
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from openenv_mcp.errors import ConfigError, PolicyError

__all__ = ["RETRY_STATUS", "OpenAIPolicy", "Policy", "PolicyError", "Turn"]

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""HTTP statuses from a model server that are retried with backoff."""


@dataclass
class Turn:
    """What a policy returns: the assistant message, plus optional accounting."""

    message: dict[str, Any]
    """An OpenAI chat-completions assistant message (``content``, ``tool_calls``)."""
    usage: dict[str, Any] | None = None
    """Token usage as the model server reported it (``prompt_tokens``...)."""
    finish_reason: str | None = None
    """The model server's ``finish_reason``."""
    logprobs: list[dict[str, Any]] | None = None
    """Per generated token ``{"token", "logprob"}`` (``choices[i].logprobs.content``), when asked for."""
    token_ids: list[int] | None = None
    """The generated token ids, when the server returns them (vLLM ``return_token_ids``,
    or tokens given as ``token_id:N`` in the logprobs)."""
    prompt_token_ids: list[int] | None = None
    """The prompt's token ids, when the server returns them (vLLM ``return_token_ids``)."""

    def record(self) -> dict[str, Any] | None:
        """What a trajectory keeps of this turn for training (``None``: nothing to keep)."""
        out = {
            k: v
            for k, v in (
                ("token_ids", self.token_ids),
                ("logprobs", self.logprobs),
                ("prompt_token_ids", self.prompt_token_ids),
            )
            if v is not None
        }
        if not out:
            return None
        return {"finish_reason": self.finish_reason, **out}

    @classmethod
    def from_choice(cls, completion: dict[str, Any], choice: dict[str, Any], *, first: bool = True) -> Turn:
        """One choice of a chat-completions response as a :class:`Turn`.

        ``completion`` is the whole response body, ``choice`` one of its ``choices``;
        the usage (which covers every choice) goes with the ``first`` one. Logprobs
        (``choice.logprobs.content``) and token ids (vLLM's ``token_ids`` and
        ``prompt_token_ids``, or tokens given as ``token_id:N``) are kept when present.
        """
        turn = cls(
            message=choice["message"],
            usage=completion.get("usage") if first else None,
            finish_reason=choice.get("finish_reason"),
        )
        content = (choice.get("logprobs") or {}).get("content") if isinstance(choice.get("logprobs"), dict) else None
        if isinstance(content, list):
            turn.logprobs = [
                {"token": t.get("token"), "logprob": t.get("logprob")} for t in content if isinstance(t, dict)
            ]
            ids = [_token_id(t.get("token")) for t in turn.logprobs]
            if ids and all(i is not None for i in ids):  # vLLM return_tokens_as_token_ids: "token_id:123"
                turn.token_ids = ids  # type: ignore[assignment]
        ids = choice.get("token_ids")
        if _int_list(ids):
            turn.token_ids = ids
        prompt_ids = completion.get("prompt_token_ids", choice.get("prompt_token_ids"))
        if _int_list(prompt_ids):
            turn.prompt_token_ids = prompt_ids
        return turn


Policy = Callable[[list[dict[str, Any]], list[dict[str, Any]]], Turn | dict[str, Any] | Awaitable[Any]]
"""``policy(messages, tools) -> Turn | dict`` (sync or async)."""


# -- the OpenAI-compatible policy ---------------------------------------------------
class OpenAIPolicy:
    """A policy backed by an OpenAI-compatible chat-completions server (httpx).

    Args:
        base_url: the API root, e.g. ``http://127.0.0.1:8000/v1``
            (``/chat/completions`` is appended).
        model: the model name sent in each request.
        api_key: sent as ``Authorization: Bearer`` when given.
        temperature, max_tokens: sampling options (omitted when ``None``).
        extra_body: more request fields (``top_p``, ``seed``, vendor options...).
        timeout: seconds per HTTP request.
        max_retries: retries of a transient failure (429, 5xx, timeouts,
            refused connections) with exponential backoff and jitter; a
            ``Retry-After`` header is honoured (capped at ``max_backoff``).
        backoff, max_backoff: first and largest wait, seconds.
        max_connections: HTTP connection pool size (at least the concurrency).
        logprobs: ask for token logprobs (``logprobs: true``; ``top_logprobs`` too when
            given) and record them per turn.
        token_ids: ask for token ids (vLLM's ``return_token_ids: true``; not for servers
            that reject unknown fields, such as OpenAI's).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        extra_body: dict[str, Any] | None = None,
        timeout: float = 120.0,
        max_retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        max_connections: int = 64,
        logprobs: bool = False,
        top_logprobs: int | None = None,
        token_ids: bool = False,
    ) -> None:
        url = httpx.URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ConfigError(f"model server URL must look like http://HOST:PORT/v1, got {base_url!r}")
        self.base_url = str(base_url).rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        self.logprobs = logprobs
        self.top_logprobs = top_logprobs
        self.token_ids = token_ids
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        self._client = httpx.AsyncClient(headers=headers, timeout=timeout, limits=limits)
        self.retries = 0
        """Transient failures retried so far (all episodes)."""

    def request_body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """The JSON body of one chat-completions request."""
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.logprobs:
            body["logprobs"] = True
            if self.top_logprobs is not None:
                body["top_logprobs"] = self.top_logprobs
        if self.token_ids:
            body["return_token_ids"] = True
        body.update(self.extra_body)
        return body

    async def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Turn:
        return (await self.sample(messages, tools, 1))[0]

    async def sample(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], n: int) -> list[Turn]:
        """``n`` completions of one prompt in one request (``n`` in the API), one :class:`Turn` each
        (the usage, which covers them all, goes with the first)."""
        body = self.request_body(messages, tools)
        if n != 1:
            body["n"] = n
        data = await self._post(body)
        choices = data.get("choices")
        if (
            not isinstance(choices, list)
            or len(choices) < n
            or not all(isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices[:n])
        ):
            got = len(choices) if isinstance(choices, list) else 0
            raise PolicyError(
                f"model server at {self.url} answered {got} choice(s) with a message, asked for "
                f"{n}: {json.dumps(data)[:300]}"
            )
        choices = sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c.get("index"), int) else 0)
        return [Turn.from_choice(data, choice, first=i == 0) for i, choice in enumerate(choices[:n])]

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        attempt = 0
        while True:
            wait: float | None = None
            try:
                response = await self._client.post(self.url, json=body)
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as e:
                why = f"{type(e).__name__}: {e or 'no detail'}"
                if attempt >= self.max_retries:
                    raise PolicyError(
                        f"cannot reach the model server at {self.url} ({why}) after {_attempts(attempt + 1)}; "
                        "check --base-url and that the server is running"
                    ) from None
            else:
                status = response.status_code
                if status < 300:
                    try:
                        data = response.json()
                    except ValueError:
                        raise PolicyError(
                            f"model server at {self.url} answered {status} with non-JSON: "
                            f"{response.text[:200]!r}; is --base-url an OpenAI-compatible API "
                            "root (usually ending in /v1)?"
                        ) from None
                    if not isinstance(data, dict):
                        raise PolicyError(
                            f"model server at {self.url} answered a JSON {type(data).__name__}, "
                            "expected a chat completion object"
                        )
                    return data
                detail = _error_detail(response)
                if status in (401, 403):
                    raise PolicyError(
                        f"model server at {self.url} refused the API key ({status}{detail}); "
                        "check --api-key or $OPENAI_API_KEY"
                    )
                if status in (404, 405):
                    raise PolicyError(
                        f"model server at {self.url} has no chat-completions endpoint ({status}"
                        f"{detail}); --base-url must be the API root, usually ending in /v1"
                    )
                if status not in RETRY_STATUS:
                    raise PolicyError(f"model server at {self.url} rejected the request ({status}{detail})")
                if attempt >= self.max_retries:
                    raise PolicyError(
                        f"model server at {self.url} kept failing ({status}{detail}) after "
                        f"{_attempts(attempt + 1)}; try again later or lower --concurrency"
                    )
                wait = _retry_after(response)
            delay = min(self.max_backoff, self.backoff * 2**attempt) * (0.5 + random.random() / 2)
            if wait is not None:
                delay = min(self.max_backoff, max(delay, wait))
            attempt += 1
            self.retries += 1
            await anyio.sleep(delay)

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.aclose()

    async def __aenter__(self) -> OpenAIPolicy:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


def _int_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in value)


def _token_id(token: Any) -> int | None:
    if isinstance(token, str) and token.startswith("token_id:") and token[9:].isdigit():
        return int(token[9:])
    return None


def _attempts(n: int) -> str:
    return f"{n} attempt" if n == 1 else f"{n} attempts"


def _error_detail(response: httpx.Response) -> str:
    try:
        data = response.json()
        message = data.get("error", data) if isinstance(data, dict) else data
        if isinstance(message, dict):
            message = message.get("message", message)
        text = str(message)
    except ValueError:
        text = response.text
    text = " ".join(text.split())[:200]
    return f": {text}" if text else ""


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
