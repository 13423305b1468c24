"""Official clients against `kiln serve`: openai, text-generation, huggingface_hub, curl."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from conftest import require_module


def test_openai_chat(server):
    openai = require_module("openai")
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused")
    r = client.chat.completions.create(
        model="whatever", messages=[{"role": "user", "content": "What is the capital of France?"}],
        max_tokens=16, temperature=0)
    assert r.id.startswith("chatcmpl-") and len(r.id) > len("chatcmpl-")
    assert r.object == "chat.completion"
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].message.content
    assert r.choices[0].finish_reason in ("stop", "length")
    assert r.usage.completion_tokens >= 1
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_openai_chat_stream_with_usage(server):
    openai = require_module("openai")
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused")
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Count to five."}], max_tokens=12,
        temperature=0, stream=True, stream_options={"include_usage": True})
    text, usage, finish = "", None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    assert text
    assert finish in ("stop", "length")
    assert usage is not None and usage.completion_tokens >= 1


def test_openai_greedy_chat_is_deterministic(server):
    openai = require_module("openai")
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused")
    args = dict(model="m", messages=[{"role": "user", "content": "Say hello."}], max_tokens=10,
                temperature=0)
    whole = client.chat.completions.create(**args).choices[0].message.content
    streamed = "".join(c.choices[0].delta.content or "" for c in
                       client.chat.completions.create(stream=True, **args) if c.choices)
    assert whole == streamed


def test_openai_completions(server):
    openai = require_module("openai")
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused")
    r = client.completions.create(model="m", prompt="Once upon a time", max_tokens=8,
                                  temperature=0)
    assert r.id.startswith("cmpl-")
    assert r.object == "text_completion"
    assert r.choices[0].text
    assert r.usage.completion_tokens == 8 or r.choices[0].finish_reason == "stop"
    parts = [c.choices[0].text for c in client.completions.create(
        model="m", prompt="Once upon a time", max_tokens=8, temperature=0, stream=True)]
    assert "".join(parts) == r.choices[0].text


def test_openai_errors_are_typed(server):
    openai = require_module("openai")
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    with pytest.raises(openai.UnprocessableEntityError) as err:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}],
                                       top_p=5)
    assert "top_p" in str(err.value)


def test_text_generation_client(server):
    text_generation = require_module("text_generation")
    client = text_generation.Client(server.url, timeout=120)
    r = client.generate("The sky is", max_new_tokens=10, top_n_tokens=2)  # always asks details
    assert r.generated_text
    assert r.details.generated_tokens >= 1
    assert len(r.details.tokens) == r.details.generated_tokens
    assert r.details.finish_reason in ("length", "eos_token")
    tokens = []
    final = None
    for response in client.generate_stream("The sky is", max_new_tokens=10):
        if not response.token.special:
            tokens.append(response.token.text)
        if response.details is not None:
            final = response
    assert final is not None and final.generated_text == r.generated_text
    assert "".join(tokens) == r.generated_text


def test_text_generation_validation_error(server):
    text_generation = require_module("text_generation")
    client = text_generation.Client(server.url, timeout=60)
    with pytest.raises(text_generation.errors.ValidationError) as err:
        client.generate("x", max_new_tokens=5, top_p=1.0)  # TGI: top_p must be < 1.0
    assert "top_p" in str(err.value)


def test_huggingface_hub_inference_client(server):
    huggingface_hub = require_module("huggingface_hub")
    client = huggingface_hub.InferenceClient(base_url=server.url)
    text = client.text_generation("The sky is", max_new_tokens=8)
    assert isinstance(text, str) and text
    streamed = list(client.text_generation("The sky is", max_new_tokens=8, stream=True))
    assert "".join(streamed) == text
    details = list(client.text_generation("The sky is", max_new_tokens=8, stream=True,
                                          details=True))
    assert details[-1].details.generated_tokens == len(details)
    out = client.chat_completion(messages=[{"role": "user", "content": "Hi!"}], max_tokens=8,
                                 temperature=0)
    assert out.choices[0].message.content
    chunks = list(client.chat_completion(messages=[{"role": "user", "content": "Hi!"}],
                                         max_tokens=8, temperature=0, stream=True))
    assert chunks


def test_curl(server):
    if shutil.which("curl") is None:
        pytest.skip("curl not installed")
    body = json.dumps({"inputs": "Hello", "parameters": {"max_new_tokens": 5}})
    out = subprocess.run(["curl", "-sS", "-X", "POST", server.url + "/generate", "-H",
                          "Content-Type: application/json", "-d", body],
                         capture_output=True, text=True, timeout=60, check=True)
    assert "generated_text" in json.loads(out.stdout)
    stream = subprocess.run(["curl", "-sSN", "-X", "POST", server.url + "/generate_stream", "-H",
                             "Content-Type: application/json", "-d", body],
                            capture_output=True, text=True, timeout=60, check=True)
    frames = [line for line in stream.stdout.split("\n") if line.startswith("data: ")]
    assert len(frames) >= 1
    assert json.loads(frames[-1][6:])["generated_text"] is not None
    chat = json.dumps({"model": "m", "messages": [{"role": "user", "content": "Hi"}],
                       "max_tokens": 5, "stream": True,
                       "stream_options": {"include_usage": True}})
    stream = subprocess.run(["curl", "-sSN", server.url + "/v1/chat/completions", "-H",
                             "Content-Type: application/json", "-d", chat],
                            capture_output=True, text=True, timeout=60, check=True)
    frames = [line[6:] for line in stream.stdout.split("\n") if line.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    assert json.loads(frames[-2])["usage"]["completion_tokens"] >= 1


def test_operational_routes(server):
    import requests
    assert requests.get(server.url + "/health").status_code == 200
    info = requests.get(server.url + "/info").json()
    assert info["max_total_tokens"] == 2048
    models = requests.get(server.url + "/v1/models").json()
    assert models["data"][0]["object"] == "model"
    doc = requests.get(server.url + "/api-doc/openapi.json").json()
    assert "/v1/chat/completions" in doc["paths"]
    metrics = requests.get(server.url + "/metrics").text
    assert "tgi_request_count" in metrics and "kiln_kv_cache_blocks_used" in metrics
    tokens = requests.post(server.url + "/tokenize", json={"inputs": "Hello world"}).json()
    assert [t["id"] for t in tokens]
