"""Every request limit of `kiln serve` accepts a request exactly at the limit and rejects one
just past it, with TGI's status and error text on the TGI routes (422
`{"error": "Input validation error: ...", "error_type": "validation"}`) and the OpenAI error
object on the OpenAI routes. --max-concurrent-requests is in test_limits.py."""

from __future__ import annotations

import pytest
import requests

from conftest import KilnServer

MAX_INPUT, MAX_TOTAL, MAX_STOP, MAX_TOP_N, MAX_BEST_OF, PAYLOAD = 32, 40, 2, 2, 2, 4000


@pytest.fixture(scope="module")
def limited(kiln_paths):
    server = KilnServer(*kiln_paths, [
        "--max-input-tokens", str(MAX_INPUT), "--max-total-tokens", str(MAX_TOTAL),
        "--max-stop-sequences", str(MAX_STOP), "--max-top-n-tokens", str(MAX_TOP_N),
        "--max-best-of", str(MAX_BEST_OF), "--payload-limit", str(PAYLOAD)])
    yield server
    assert server.stop() == 0, server.stderr()


def prompt_of(server, tokens: int) -> str:
    """A prompt of exactly `tokens` tokens (checked with /tokenize)."""
    text = "a" + " a" * (tokens - 1)
    got = requests.post(server.url + "/tokenize", json={"inputs": text}, timeout=30).json()
    assert len(got) == tokens, got
    return text


def generate(server, inputs: str, **parameters) -> requests.Response:
    return requests.post(server.url + "/generate",
                         json={"inputs": inputs, "parameters": parameters}, timeout=120)


def assert_tgi_rejects(r: requests.Response, message: str) -> None:
    assert r.status_code == 422, r.text
    assert r.json() == {"error": "Input validation error: " + message, "error_type": "validation"}


def assert_openai_rejects(r: requests.Response, message: str, param: str) -> None:
    assert r.status_code == 422, r.text
    assert r.json() == {"error": {"message": "Input validation error: " + message,
                                  "type": "invalid_request_error", "param": param,
                                  "code": "validation"}}


# ---------------------------------------------------------------- TGI routes


def test_max_input_tokens(limited):
    assert generate(limited, prompt_of(limited, MAX_INPUT), max_new_tokens=1).status_code == 200
    r = generate(limited, prompt_of(limited, MAX_INPUT + 1), max_new_tokens=1)
    assert_tgi_rejects(r, f"`inputs` must have less than {MAX_INPUT} tokens. "
                          f"Given: {MAX_INPUT + 1}")


def test_max_total_tokens_and_max_new_tokens(limited):
    inputs = prompt_of(limited, MAX_INPUT)
    room = MAX_TOTAL - MAX_INPUT
    ok = generate(limited, inputs, max_new_tokens=room, details=True)
    assert ok.status_code == 200, ok.text
    r = generate(limited, inputs, max_new_tokens=room + 1)
    assert_tgi_rejects(r, f"`inputs` tokens + `max_new_tokens` must be <= {MAX_TOTAL}. "
                          f"Given: {MAX_INPUT} `inputs` tokens and {room + 1} `max_new_tokens`")
    assert_tgi_rejects(generate(limited, "Hi", max_new_tokens=0),
                       "`max_new_tokens` must be strictly positive")
    # Without max_new_tokens the rest of the budget is the limit.
    assert generate(limited, inputs).status_code == 200


def test_max_stop_sequences(limited):
    ok = generate(limited, "Hi", max_new_tokens=2, stop=["x"] * MAX_STOP)
    assert ok.status_code == 200, ok.text
    r = generate(limited, "Hi", max_new_tokens=2, stop=["x"] * (MAX_STOP + 1))
    assert_tgi_rejects(r, f"`stop` supports up to {MAX_STOP} stop sequences. "
                          f"Given: {MAX_STOP + 1}")


def test_max_top_n_tokens(limited):
    ok = generate(limited, "Hi", max_new_tokens=2, top_n_tokens=MAX_TOP_N, details=True)
    assert ok.status_code == 200, ok.text
    assert len(ok.json()["details"]["top_tokens"][0]) == MAX_TOP_N
    r = generate(limited, "Hi", max_new_tokens=2, top_n_tokens=MAX_TOP_N + 1)
    assert_tgi_rejects(r, f"`top_n_tokens` must be >= 0 and <= {MAX_TOP_N}. "
                          f"Given: {MAX_TOP_N + 1}")


def test_max_best_of(limited):
    ok = generate(limited, "Hi", max_new_tokens=2, best_of=MAX_BEST_OF, do_sample=True,
                  details=True)
    assert ok.status_code == 200, ok.text
    assert len(ok.json()["details"]["best_of_sequences"]) == MAX_BEST_OF - 1
    r = generate(limited, "Hi", max_new_tokens=2, best_of=MAX_BEST_OF + 1, do_sample=True)
    assert_tgi_rejects(r, f"`best_of` must be > 0 and <= {MAX_BEST_OF}. "
                          f"Given: {MAX_BEST_OF + 1}")


def test_payload_limit(limited):
    def post(size: int) -> requests.Response:
        body = b'{"inputs": "Hi", "parameters": {"max_new_tokens": 1}}'
        body += b" " * (size - len(body))  # JSON allows trailing whitespace
        assert len(body) == size
        return requests.post(limited.url + "/generate", data=body, timeout=60,
                             headers={"Content-Type": "application/json"})

    assert post(PAYLOAD).status_code == 200
    r = post(PAYLOAD + 1)
    assert r.status_code == 413
    assert r.json() == {"error": "Payload too large: the body exceeds the limit of "
                                 f"{PAYLOAD} bytes", "error_type": "payload_too_large"}


# ---------------------------------------------------------------- OpenAI routes


def complete(server, **body) -> requests.Response:
    return requests.post(server.url + "/v1/completions", json={"model": "m", **body},
                         timeout=120)


def chat(server, **body) -> requests.Response:
    messages = [{"role": "user", "content": "Hi"}]
    return requests.post(server.url + "/v1/chat/completions",
                         json={"model": "m", "messages": messages, **body}, timeout=120)


def test_openai_prompt_and_max_tokens(limited):
    at_limit = list(range(1000, 1000 + MAX_INPUT))  # token ids
    room = MAX_TOTAL - MAX_INPUT
    ok = complete(limited, prompt=at_limit, max_tokens=room, ignore_eos=True)
    assert ok.status_code == 200, ok.text
    assert ok.json()["usage"] == {"prompt_tokens": MAX_INPUT, "completion_tokens": room,
                                  "total_tokens": MAX_TOTAL}
    assert_openai_rejects(complete(limited, prompt=at_limit + [1000], max_tokens=1),
                          f"`inputs` must have less than {MAX_INPUT} tokens. "
                          f"Given: {MAX_INPUT + 1}", "inputs")
    for name in ("max_tokens", "max_completion_tokens"):
        assert_openai_rejects(
            complete(limited, prompt=at_limit, **{name: room + 1}),
            f"`inputs` tokens + `max_new_tokens` must be <= {MAX_TOTAL}. Given: {MAX_INPUT} "
            f"`inputs` tokens and {room + 1} `max_new_tokens`", "max_new_tokens")


def test_openai_chat_max_tokens(limited):
    prompt_tokens = chat(limited, max_tokens=1).json()["usage"]["prompt_tokens"]
    room = MAX_TOTAL - prompt_tokens
    ok = chat(limited, max_tokens=room, ignore_eos=True)
    assert ok.status_code == 200, ok.text
    assert ok.json()["usage"]["total_tokens"] == MAX_TOTAL
    assert_openai_rejects(
        chat(limited, max_tokens=room + 1),
        f"`inputs` tokens + `max_new_tokens` must be <= {MAX_TOTAL}. Given: {prompt_tokens} "
        f"`inputs` tokens and {room + 1} `max_new_tokens`", "max_new_tokens")


def test_openai_stop_and_logprobs(limited):
    stop_ok = chat(limited, max_tokens=2, stop=["x"] * MAX_STOP)
    assert stop_ok.status_code == 200, stop_ok.text
    assert_openai_rejects(chat(limited, max_tokens=2, stop=["x"] * (MAX_STOP + 1)),
                          f"`stop` supports up to {MAX_STOP} stop sequences. "
                          f"Given: {MAX_STOP + 1}", "stop")
    ok = chat(limited, max_tokens=2, logprobs=True, top_logprobs=MAX_TOP_N)
    assert ok.status_code == 200, ok.text
    assert len(ok.json()["choices"][0]["logprobs"]["content"][0]["top_logprobs"]) == MAX_TOP_N
    assert_openai_rejects(chat(limited, max_tokens=2, logprobs=True, top_logprobs=MAX_TOP_N + 1),
                          f"`top_logprobs` must be >= 0 and <= {MAX_TOP_N}. "
                          f"Given: {MAX_TOP_N + 1}", "top_logprobs")
    assert complete(limited, prompt="Hi", max_tokens=2, logprobs=MAX_TOP_N).status_code == 200
    assert_openai_rejects(complete(limited, prompt="Hi", max_tokens=2, logprobs=MAX_TOP_N + 1),
                          f"`logprobs` must be >= 0 and <= {MAX_TOP_N}. "
                          f"Given: {MAX_TOP_N + 1}", "logprobs")
