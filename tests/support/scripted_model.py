"""A small OpenAI-compatible chat-completions server with a scripted policy, for tests.

It is a real HTTP server (Starlette under uvicorn on a free loopback port) so
the rollout client code runs end to end. The policy reads each request: the
user message (the task prompt) picks a *plan*, the number of assistant turns
so far picks the plan's next turn, and the request's ``tools`` list must offer
every function the turn calls (otherwise it answers in text, which ends the
episode and makes the test fail visibly). A plan is a list of turns; a turn is
a list of ``(function_name, raw_arguments_text)`` calls, or a text answer. Past the plan's end
the model answers "Done." without tool calls.

Options: ``api_key`` (401 for any other bearer), ``flaky`` (the first request
of every turn of every conversation is answered 503 once, with Retry-After: 0),
``variants`` (``{prompt: [plan, plan, ...]}``: successive conversations on one
prompt take the plans in turn, so a group of rollouts of one task can differ;
the variant rides in the tool-call ids) and ``judge`` (a function from a request
without tools, an LLM-judge prompt, to the reply text; ``judge_prompts`` records
each prompt).

Like vLLM, it answers ``logprobs: true`` with ``choices[i].logprobs.content`` (one entry
per "token": a character of the message's JSON text, logprob ``-0.1 * position``),
``return_token_ids: true`` with ``choices[i].token_ids`` (the characters' code points)
and a top-level ``prompt_token_ids``, and ``n`` with n choices (the same scripted turn).
``stop_after`` answers 500 (no retry helps) once that many completions were served.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

Plan = list[list[tuple[str, str]] | str]
"""A turn is a list of calls, or a text answer (e.g. a CodeAct turn: prose with a code block)."""


def call(name: str, arguments: Any) -> tuple[str, str]:
    """One scripted call; ``arguments`` is dumped to JSON unless it is already raw text."""
    return name, arguments if isinstance(arguments, str) else json.dumps(arguments)


def plans_from_solutions(
    environment: Any, kind: str = "reference", *, one_call_per_turn: bool = True, prefix: Plan | None = None
) -> dict[str, Plan]:
    """A plan per task prompt from an environment's scripted trajectories."""
    plans: dict[str, Plan] = {}
    for task in environment.tasks.tasks:
        actions = environment.trajectory(task, kind)
        calls = [call(a.name, a.arguments) for a in actions]
        turns = [[c] for c in calls] if one_call_per_turn else [calls]
        assert task.prompt not in plans, f"prompts must be unique to script a policy: {task.prompt!r}"
        plans[task.prompt] = [*(prefix or []), *turns]
    return plans


class ScriptedModel:
    """The server; use as a context manager. ``url`` is the API root (``.../v1``)."""

    def __init__(
        self,
        plans: dict[str, Plan],
        *,
        api_key: str | None = None,
        flaky: bool = False,
        stop_after: int | None = None,
        variants: dict[str, list[Plan]] | None = None,
        judge: Any = None,
    ) -> None:
        self.plans = plans
        self.stop_after = stop_after
        self.served = 0
        self.variants = variants or {}
        self._next_variant: dict[str, int] = {}
        self.judge = judge
        self.judge_prompts: list[str] = []
        self.api_key = api_key
        self.flaky = flaky
        self.requests: list[dict[str, Any]] = []
        self.failed: set[tuple[str, int]] = set()
        self.status_counts: dict[int, int] = {}
        self._lock = threading.Lock()
        app = Starlette(routes=[Route("/v1/chat/completions", self.completions, methods=["POST"])])
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert self._thread.is_alive() and time.monotonic() < deadline, "scripted model server did not start"
            time.sleep(0.005)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._sock.close()

    def _answer(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> JSONResponse:
        with self._lock:
            self.status_counts[status] = self.status_counts.get(status, 0) + 1
        return JSONResponse(body, status_code=status, headers=headers)

    def _judged(self, body: dict[str, Any], judge: Any) -> JSONResponse:
        """A judge request (no tools): the judge's reply to the last message, or the status it fails with."""
        prompt = body["messages"][-1]["content"]
        with self._lock:
            self.requests.append(body)
            self.judge_prompts.append(prompt)
        reply = judge(prompt)
        if isinstance(reply, int):  # an HTTP status: the judge endpoint fails
            return self._answer(reply, {"error": {"message": f"judge failure {reply}"}})
        return self._answer(
            200,
            {
                "id": "judge",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )

    async def completions(self, request: Request) -> JSONResponse:
        if self.api_key is not None and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return self._answer(
                401,
                {
                    "error": {
                        "message": "Incorrect API key provided",
                        "type": "invalid_request_error",
                        "code": "invalid_api_key",
                    }
                },
            )
        body = await request.json()
        messages = body["messages"]
        if self.judge is not None and not body.get("tools"):
            return self._judged(body, self.judge)
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        turn = sum(1 for m in messages if m["role"] == "assistant")
        with self._lock:
            self.requests.append(body)
            key = (prompt, turn)
            if self.flaky and key not in self.failed:
                self.failed.add(key)
                flake = True
            else:
                flake = False
        if self.stop_after is not None:
            with self._lock:
                over = self.served >= self.stop_after
                self.served += 0 if over else 1
            if over:
                return self._answer(400, {"error": {"message": "the model server went away"}})
        if flake:
            return self._answer(503, {"error": {"message": "overloaded, try again"}}, {"Retry-After": "0"})
        plan = self.plans.get(prompt)
        variant = None
        if prompt in self.variants:
            if turn == 0:
                with self._lock:
                    variant = self._next_variant.get(prompt, 0) % len(self.variants[prompt])
                    self._next_variant[prompt] = self._next_variant.get(prompt, 0) + 1
            else:
                first = next(m for m in messages if m["role"] == "assistant")
                variant = int(first["tool_calls"][0]["id"].split("_")[1][1:])
            plan = self.variants[prompt][variant]
        offered = {t["function"]["name"] for t in body.get("tools", [])}
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if plan is None:
            message["content"] = f"I have no plan for: {prompt}"
        elif turn >= len(plan):
            message["content"] = "Done."
        elif isinstance(plan[turn], str):
            message["content"] = plan[turn]
        else:
            calls = plan[turn]
            missing = [name for name, _ in calls if name not in offered and not name.startswith("no_such")]
            if missing:
                message["content"] = f"The tools {missing} are not offered; offered: {sorted(offered)}"
            else:
                message["tool_calls"] = [
                    {
                        "id": f"call_{turn}_{i}" if variant is None else f"call_v{variant}_{turn}_{i}",
                        "type": "function",
                        "function": {"name": name, "arguments": raw},
                    }
                    for i, (name, raw) in enumerate(calls)
                ]
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        choices = _choices(body, message, finish)
        extra = {"prompt_token_ids": [ord(ch) for ch in prompt]} if body.get("return_token_ids") else {}
        return self._answer(
            200,
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "scripted"),
                **extra,
                "choices": choices,
                "usage": {
                    "prompt_tokens": 10 * len(messages),
                    "completion_tokens": 5,
                    "total_tokens": 10 * len(messages) + 5,
                },
            },
        )


def _choices(body: dict[str, Any], message: dict[str, Any], finish: str) -> list[dict[str, Any]]:
    """``n`` copies of ``message``, with logprobs and token ids (one a character) when asked."""
    text = json.dumps(message, sort_keys=True)
    choices = []
    for i in range(int(body.get("n") or 1)):
        choice: dict[str, Any] = {"index": i, "message": message, "finish_reason": finish}
        if body.get("logprobs"):
            choice["logprobs"] = {
                "content": [
                    {"token": ch, "logprob": round(-0.1 * k, 3), "top_logprobs": []} for k, ch in enumerate(text)
                ]
            }
        if body.get("return_token_ids"):
            choice["token_ids"] = [ord(ch) for ch in text]
        choices.append(choice)
    return choices
