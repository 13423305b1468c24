"""`kiln serve --speculate` with real clients (issue #29): the openai client and TGI's
`text-generation` client stream and complete unchanged (several tokens may arrive from one
step), outputs equal the same server's without speculation, the metrics count drafts, a client
that leaves mid-draft frees everything, and bad flag values are refused with a clear message."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import requests

from conftest import SERVER_FLAGS, metric, require_module

# Text the model copies, so drafts are accepted.
COPY = ("Repeat this text exactly: The museum opens at nine o'clock every morning except on "
        "Mondays. Tickets can be bought at the entrance or online, and children under twelve "
        "enter for free. Guided tours start every hour from the main hall.")


@pytest.fixture(scope="module")
def servers(kiln_paths):
    from conftest import KilnServer
    # Every proposal verified: these tests are about clients and bookkeeping, and the cost
    # policy may rightly decline drafts on a slow (sanitized, loaded) build.
    spec = KilnServer(*kiln_paths, [*SERVER_FLAGS, "--speculate", "4", "--speculate-all-drafts"])
    plain = KilnServer(*kiln_paths, SERVER_FLAGS)
    yield spec, plain
    for s in (spec, plain):
        assert s.stop() == 0, s.stderr()


def chat(url: str, stream: bool, **extra):
    require_module("openai")
    import openai
    client = openai.OpenAI(base_url=url + "/v1", api_key="-")
    args = {"model": "tgi", "messages": [{"role": "user", "content": COPY}], "max_tokens": 64,
            "temperature": 0, **extra}
    if not stream:
        r = client.chat.completions.create(**args)
        return r.choices[0].message.content, r.choices[0].finish_reason, r.usage.completion_tokens
    text, finish, chunks = "", None, 0
    for chunk in client.chat.completions.create(stream=True, **args):
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
            chunks += 1
    return text, finish, chunks


def test_openai_client_unchanged(servers):
    spec, plain = servers
    before = metric(requests.get(spec.url + "/metrics", timeout=10).text,
                    "kiln_spec_decode_num_accepted_tokens_total")
    for stream in (False, True):
        got = chat(spec.url, stream)
        want = chat(plain.url, stream)
        assert got[:2] == want[:2], (stream, got, want)
        assert got[0]
    seeded = dict(temperature=0.9, seed=7)
    assert chat(spec.url, True, **seeded)[:2] == chat(plain.url, True, **seeded)[:2]
    text = requests.get(spec.url + "/metrics", timeout=10).text
    assert metric(text, "kiln_speculate") == 4
    assert metric(text, "kiln_spec_decode_num_accepted_tokens_total") > before
    assert metric(text, "kiln_spec_decode_acceptance_rate_count") > 0
    assert "tgi_request_skipped_tokens_bucket" in text


def test_tgi_client_unchanged(servers):
    require_module("text_generation")
    from text_generation import Client
    spec, plain = servers
    outs = []
    for s in (spec, plain):
        c = Client(s.url, timeout=60)
        full = c.generate(COPY, max_new_tokens=48)
        streamed = [r for r in c.generate_stream(COPY, max_new_tokens=48)]
        outs.append((full.generated_text, [t.id for t in full.details.tokens],
                     "".join(r.token.text for r in streamed if not r.token.special)))
        assert streamed[-1].details.generated_tokens == 48
    assert outs[0] == outs[1]


def test_client_leaving_mid_draft_frees_everything(servers):
    spec, _ = servers
    for _ in range(4):
        with requests.post(spec.url + "/generate_stream", stream=True, timeout=60,
                           json={"inputs": COPY, "parameters": {"max_new_tokens": 400}}) as r:
            for i, _line in enumerate(r.iter_lines()):
                if i > 12:
                    break  # the connection closes here, in the middle of the stream
    ok = requests.post(spec.url + "/generate", timeout=60,
                       json={"inputs": COPY, "parameters": {"max_new_tokens": 16}})
    assert ok.status_code == 200
    for _ in range(100):
        status = requests.get(spec.url + "/v1/status", timeout=10).json()
        if status["sequences"]["running"] == 0 and status["kv_cache"]["blocks_used"] == 0:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"blocks still held: {status}")
    assert status["speculation"]["speculate"] == 4
    assert status["speculation"]["accepted"] > 0


def test_draft_model_with_another_vocabulary_is_refused(kiln_paths):
    exe, model = kiln_paths
    stories = Path(__file__).resolve().parents[1] / "data" / "models" / "stories260K.gguf"
    if not stories.is_file():
        pytest.skip("stories260K.gguf not in tests/data/models")
    proc = subprocess.run([str(exe), "generate", "--model-id", str(model), "--prompt", "hi",
                           "--draft-model", str(stories)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode != 0
    assert "the draft model's vocabulary (512 tokens) differs from the model's (49152)" in \
        proc.stderr, proc.stderr


@pytest.mark.parametrize("flags,message", [
    (["--speculate", "-1"], "--speculate must be in 0..16"),
    (["--speculate", "99"], "--speculate must be in 0..16"),
    (["--speculate", "4", "--speculate-ngram", "0"], "--speculate-ngram must be in 1..32"),
    (["--speculate", "4", "--speculate-max-step-tokens", "0"],
     "--speculate-max-step-tokens must be >= 1"),
])
def test_bad_flags_are_refused(kiln_paths, flags, message):
    exe, model = kiln_paths
    for sub in (["serve", "--port", "0"], ["generate", "--prompt", "hi"]):
        proc = subprocess.run([str(exe), *sub, "--model-id", str(model), *flags],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode != 0
        assert message in proc.stderr, proc.stderr
