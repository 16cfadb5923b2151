"""A scripted model for tests: the real openai client, talking to a server that replies with
given assistant messages in turn (the last one repeats), with given ``usage`` figures."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai


def scripted_client(
    replies: list[dict[str, Any]], usages: list[tuple[int, int]] | None = None
) -> tuple[openai.OpenAI, list[dict[str, Any]]]:
    """(client, requests): ``requests`` collects each request body the server received."""
    requests: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        requests.append(json.loads(request.read()))
        i = min(len(requests), len(replies)) - 1
        prompt, completion = usages[i] if usages else (1, 1)
        return httpx2.Response(
            200,
            json={
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "scripted",
                "choices": [{"index": 0, "message": replies[i], "finish_reason": "stop"}],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            },
        )

    client = openai.OpenAI(
        base_url="http://scripted.invalid/v1",
        api_key="k",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    return client, requests


def tool_calls(*calls: tuple[str, str, str]) -> dict[str, Any]:
    """An assistant message with tool calls given as (id, name, JSON arguments text)."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in calls
        ],
    }
