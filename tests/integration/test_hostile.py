"""Thousands of malformed requests: every one gets a 4xx (or, for a request cut off mid-way,
a closed connection), none a 5xx, the process never dies and /health stays 200."""

from __future__ import annotations

import collections
import itertools
import json
import random
from concurrent.futures import ThreadPoolExecutor

import requests

from http_raw import exchange, request_bytes

ROUTES = ["/generate", "/generate_stream", "/", "/v1/chat/completions", "/v1/completions",
          "/tokenize"]

BASE = {
    "/generate": {"inputs": "Hi", "parameters": {"max_new_tokens": 1}},
    "/generate_stream": {"inputs": "Hi", "parameters": {"max_new_tokens": 1}},
    "/": {"inputs": "Hi", "parameters": {"max_new_tokens": 1}, "stream": False},
    "/v1/chat/completions": {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1},
    "/v1/completions": {"prompt": "Hi", "max_tokens": 1},
    "/tokenize": {"inputs": "Hi"},
}

FIELDS = {
    "tgi": ["inputs", "parameters", "stream"],
    "tgi_params": ["best_of", "decoder_input_details", "details", "do_sample",
                   "frequency_penalty", "max_new_tokens", "repetition_penalty",
                   "return_full_text", "seed", "stop", "temperature", "top_k", "top_n_tokens",
                   "top_p", "truncate", "typical_p", "watermark", "grammar", "adapter_id"],
    "openai": ["messages", "prompt", "model", "n", "logprobs", "top_logprobs", "stop", "seed",
               "max_tokens", "max_completion_tokens", "stream", "stream_options",
               "response_format", "temperature", "top_p", "top_k", "min_p", "presence_penalty",
               "frequency_penalty", "logit_bias", "ignore_eos", "min_tokens", "stop_token_ids",
               "tools", "suffix", "echo", "repetition_penalty", "skip_special_tokens"],
}

# Values that are wrong for some field or other (never a 5xx for any).
BAD_VALUES = [None, True, False, -1, 0, 2**31, 2**64, -2**63 - 1, 1.5, -1e308, 1e308, "",
              "x" * 300, "\u0000", "\ud800", [], [None], [[[]]], {}, {"a": 1}, [1, "a"],
              ["a"] * 50, [-5], [2**40], {"99999999": 1}, {"1": "x"}, {"type": "json_object"},
              {"include_usage": "yes"}, [{"role": 1}], [{"role": "user", "content": [1]}],
              [{"role": "user", "content": [{"type": "image_url"}]}]]

BAD_JSON = [b"", b"{", b"}", b"[", b"null", b"1", b'"x"', b"[]", b"{'a':1}", b'{"a":}',
            b'{"inputs": "a",}', b'{"inputs": tru}', b"{\"inputs\": \"\xff\xfe\"}",
            b'{"inputs": "\\ud800"}', b'{"inputs": "\\u12"}', b"{\"inputs\": \"a\x00b\"}",
            b'{"a": 1e999}', b'{"a": -1e999}', b'{"a": 00}', b'{"a": 1.}', b'{"a": .5}',
            b'{"a": NaN}', b'{"a": Infinity}', b"\xef\xbb\xbf{}", b"{" * 100000,
            b"[" * 100000 + b"]" * 100000, b'{"a":' * 5000 + b"1" + b"}" * 5000,
            b'{"inputs": "' + b"\xc3" * 1000 + b'"}', b"\x00" * 64, b"\xff" * 64]

RAW_HTTP = [
    b"\r\n\r\n", b"GARBAGE\r\n\r\n", b"GET\r\n\r\n", b"GET / HTTP/2.0\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
    b"POST /generate HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
    b"POST /generate HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nabcde",
    b"POST /generate HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
    b"POST /generate HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
    b"GET / HTTP/1.1\r\nBad Header Line\r\n\r\n", b"GET / HTTP/1.1\r\n: empty\r\n\r\n",
    b"GET / HTTP/1.1\r\nX-A: " + b"a" * 100000 + b"\r\n\r\n",
    b"GET / HTTP/1.1\r\n" + b"X-H: v\r\n" * 500 + b"\r\n",
    b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n", b"G\x00T / HTTP/1.1\r\n\r\n",
    b"GET /\xff\xfe HTTP/1.1\r\n\r\n", b"DELETE /generate HTTP/1.1\r\n\r\n",
    b"PUT /v1/chat/completions HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
    b"BREW /coffee HTTP/1.1\r\n\r\n", b"GET /../../etc/passwd HTTP/1.1\r\n\r\n",
    b"POST /generate HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
    b"POST /generate HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc",  # body cut short
    b"POST /generate HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: x\r\n",  # head cut short
]


def mutated_bodies(rng: random.Random) -> list[tuple[str, bytes]]:
    out = []
    for route, base in BASE.items():
        keys = (["inputs"] if route == "/tokenize"
                else FIELDS["openai"] if route.startswith("/v1/") else FIELDS["tgi"])
        for key, value in itertools.product(keys, BAD_VALUES):
            body = json.loads(json.dumps(base))
            body[key] = value
            out.append((route, json.dumps(body).encode()))
        if "parameters" in base:
            for key, value in itertools.product(FIELDS["tgi_params"], BAD_VALUES):
                body = json.loads(json.dumps(base))
                body["parameters"][key] = value
                out.append((route, json.dumps(body).encode()))
        for bad in BAD_JSON:
            out.append((route, bad))
        valid = json.dumps(base).encode()
        for _ in range(20):  # truncations and byte flips of a valid body
            cut = rng.randrange(len(valid))
            out.append((route, valid[:cut]))
            flipped = bytearray(valid)
            flipped[rng.randrange(len(flipped))] = rng.randrange(256)
            out.append((route, bytes(flipped)))
    return out


def classify(route: str, body: bytes) -> tuple[int, bytes]:
    # Generous: a harmless mutation generates, and this machine may be busy.
    return exchange(PORT, request_bytes("POST", route, body), timeout=600)


PORT = 0


def test_hostile_inputs(start_server):
    global PORT
    server = start_server("--max-total-tokens", "48", "--max-input-tokens", "32",
                          "--payload-limit", "200000", "--max-concurrent-requests", "16",
                          "--max-queue", "1000")
    PORT = server.port
    rng = random.Random(7)
    cases = mutated_bodies(rng)
    raw_cases = RAW_HTTP * 4
    assert len(cases) + len(raw_cases) >= 2000, len(cases) + len(raw_cases)

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda c: (c, classify(*c)), cases))
        # A request cut short waits for the rest until the read timeout: give up sooner.
        raw_results = list(pool.map(lambda r: (r, exchange(PORT, r, timeout=5)), raw_cases))
    histogram = collections.Counter(s for _, (s, _) in results + raw_results)
    print("statuses:", dict(sorted(histogram.items())))
    five_xx = [(c[0], c[1][:120], s, d[:200]) for c, (s, d) in results if s >= 500]
    five_xx += [(r[:80], s, d[:200]) for r, (s, d) in raw_results if s >= 500]
    assert not five_xx, five_xx[:5]
    # Every well-framed request got an answer (a 4xx, or 200 when the mutation was harmless).
    unanswered = [(c[0], c[1][:120]) for c, (s, _) in results if s == 0]
    assert not unanswered, unanswered[:5]
    assert server.alive(), server.stderr()
    assert requests.get(server.url + "/health", timeout=10).status_code == 200
    r = requests.post(server.url + "/generate",
                      json={"inputs": "Hi", "parameters": {"max_new_tokens": 2}}, timeout=60)
    assert r.status_code == 200
