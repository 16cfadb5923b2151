"""The request a model call sends: the SDK's ``client.post`` (helpers.loop.model_call) sends the
very bytes ``chat.completions.create`` would, for any messages, schemas and fields."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.loop.model_call import _post_request
from helpers.tooling.tools import default_registry

REPLY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}


def _capturing_client(bodies: list[bytes]) -> openai.OpenAI:
    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(request.content)
        return httpx2.Response(200, json=REPLY)

    return openai.OpenAI(
        base_url="http://provider.invalid/v1",
        api_key="k",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )


# any JSON value a provider field or a schema may hold (text of any characters but lone
# surrogates, which no JSON encoder sends)
_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=12,
)
_call = st.fixed_dictionaries(
    {
        "id": _text,
        "type": st.just("function"),
        "function": st.fixed_dictionaries({"name": _text, "arguments": _text}),
    }
)
_message = st.one_of(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "developer", "user"]), "content": _text}
    ),
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "content": st.none() | _text},
        optional={"tool_calls": st.lists(_call, max_size=2), "reasoning_content": _json},
    ),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": _text, "content": _text}),
    st.dictionaries(_text, _json, max_size=3),  # a shape no provider documents
)
_schema = st.fixed_dictionaries(
    {
        "type": st.just("function"),
        "function": st.fixed_dictionaries(
            {"name": _text, "description": _text, "parameters": st.dictionaries(_text, _json)}
        ),
    }
)
# the fields a request carries besides its messages and tools, in the order request_completion
# builds them: the completion limit (one of its two names), then the temperature
_fields = st.builds(
    lambda limit, temperature: {**limit, **temperature},
    st.dictionaries(
        st.sampled_from(["max_tokens", "max_completion_tokens"]), st.integers(0, 10**6), max_size=1
    ),
    st.dictionaries(st.just("temperature"), st.floats(0, 2), max_size=1),
)


def _both_ways(
    messages: list[dict[str, Any]], schemas: list[dict[str, Any]], fields: dict[str, Any]
) -> tuple[bytes, bytes]:
    bodies: list[bytes] = []
    client = _capturing_client(bodies)
    _post_request(client, "m", messages, schemas, fields)
    client.chat.completions.with_raw_response.create(
        model="m", messages=messages, tools=schemas, **fields
    )
    assert len(bodies) == 2
    return bodies[0], bodies[1]


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.lists(_message, max_size=5), st.lists(_schema, max_size=3), _fields)
def test_a_request_is_the_bytes_create_would_send(messages, schemas, fields) -> None:
    ours, sdks = _both_ways(messages, schemas, fields)
    assert ours == sdks, f"ours:\n{ours[:400]!r}\ncreate's:\n{sdks[:400]!r}"


def test_the_registry_schemas_and_an_empty_list_are_sent_as_create_sends_them() -> None:
    messages = [{"role": "user", "content": "hi"}]
    schemas = default_registry().schemas()
    for sent in (schemas, []):
        ours, sdks = _both_ways(messages, sent, {"max_completion_tokens": 5})
        assert ours == sdks
        assert json.loads(ours)["tools"] == sent
