"""Several models in one `kiln serve` (issue #26): two decoders and an encoder, each on its own
cores; OpenAI requests pick by "model", TGI routes by /models/NAME/...; outputs equal those of
each model served alone; /v1/models lists them with cores, kind and state; /metrics labels
every sample with its model; an unknown model is a 404 with OpenAI's error body."""

from __future__ import annotations

import os
import pytest
import requests

from conftest import REPO, KilnServer, metric, require_module, replica_cores

STORIES = REPO.parent / "shared" / "models" / "stories260K.gguf"


@pytest.fixture(scope="module")
def multi(kiln_paths, minilm):
    exe, smol = kiln_paths
    cores = replica_cores(2)
    server = KilnServer(exe, smol, [
        "--model", f"smol={smol}:cores={cores[0]}",
        "--model", f"stories={STORIES}:cores={cores[1]}",
        "--model", f"minilm={minilm}:cores={cores[1]}",
        "--kv-cache-memory", "0.25"])
    yield server
    assert server.stop() == 0, server.stderr()


def generate(url: str, prompt: str, n: int = 12, key: str = "k") -> str:
    r = requests.post(url, json={"inputs": prompt, "parameters": {"max_new_tokens": n}},
                      headers={"Authorization": f"Bearer {key}"}, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()["generated_text"]


def test_models_listed_with_their_cores(multi):
    data = requests.get(multi.url + "/v1/models", timeout=10).json()["data"]
    assert [m["id"] for m in data] == ["smol", "stories", "minilm"]
    assert [m["kind"] for m in data] == ["decoder", "decoder", "encoder"]
    assert all(m["state"] == "ready" and m["cores"] and m["weight_bytes"] > 0 for m in data)
    assert data[0]["cores"] != data[1]["cores"] or len(os.sched_getaffinity(0)) == 1


def test_outputs_equal_each_model_alone(multi, kiln_paths):
    exe, smol = kiln_paths
    alone = KilnServer(exe, STORIES, [])
    try:
        want = generate(alone.url + "/generate", "Once upon a time")
    finally:
        assert alone.stop() == 0
    assert generate(multi.url + "/models/stories/generate", "Once upon a time") == want
    # The default (first) model answers the plain TGI routes.
    smol_alone = KilnServer(exe, smol, ["--kv-cache-memory", "0.25"])
    try:
        want_smol = generate(smol_alone.url + "/generate", "The capital of France is")
    finally:
        assert smol_alone.stop() == 0
    assert generate(multi.url + "/generate", "The capital of France is") == want_smol
    assert generate(multi.url + "/models/smol/generate", "The capital of France is") == want_smol


def test_openai_clients_pick_by_model(multi):
    require_module("openai")
    import openai
    client = openai.OpenAI(base_url=multi.url + "/v1", api_key="-")
    for name in ("smol", "stories"):
        r = client.chat.completions.create(model=name, max_tokens=6, temperature=0,
                                           messages=[{"role": "user", "content": "Hi"}])
        assert r.model == name and r.choices[0].message.content is not None
    e = client.embeddings.create(model="minilm", input=["one", "two"])
    assert len(e.data) == 2 and len(e.data[0].embedding) == 384
    with pytest.raises(openai.NotFoundError) as err:
        client.chat.completions.create(model="gpt-17", max_tokens=2,
                                       messages=[{"role": "user", "content": "Hi"}])
    assert "gpt-17" in str(err.value)
    # An encoder does not generate; a decoder does not embed.
    r = requests.post(multi.url + "/v1/chat/completions", json={
        "model": "minilm", "messages": [{"role": "user", "content": "Hi"}]}, timeout=30)
    assert r.status_code == 400, r.text
    r = requests.post(multi.url + "/v1/embeddings", json={"model": "smol", "input": "x"})
    assert r.status_code == 400, r.text


def test_unknown_model_path_and_metrics(multi):
    r = requests.post(multi.url + "/models/nope/generate", json={"inputs": "x"}, timeout=10)
    assert r.status_code == 404 and "nope" in r.json()["error"], r.text
    requests.post(multi.url + "/models/stories/generate",
                  json={"inputs": "Hi", "parameters": {"max_new_tokens": 2}}, timeout=60)
    text = requests.get(multi.url + "/metrics", timeout=10).text
    assert metric(text, 'tgi_request_count{model="stories"}') >= 1
    assert 'kiln_encoder_batches_total{model="minilm"}' in text
    # Each family once: HELP/TYPE lines are not repeated per model.
    assert text.count("# TYPE tgi_request_count ") == 1
    assert requests.get(multi.url + "/models/stories/health", timeout=10).status_code == 200
    info = requests.get(multi.url + "/models/minilm/info", timeout=10).json()
    assert info["model_pipeline_tag"] == "feature-extraction"


def test_bad_model_flags_are_refused(kiln_paths):
    import subprocess
    exe, smol = kiln_paths
    for flags, words in ((["--model", "nosource="], "expected NAME=SOURCE"),
                         (["--model", f"a={smol}:cores=0,colour=red"], "unknown option 'colour'"),
                         (["--model", f"a={smol}", "--model", f"a={STORIES}"], "two models")):
        p = subprocess.run([str(exe), "serve", "--port", "0", *flags], capture_output=True,
                           text=True, timeout=120)
        assert p.returncode != 0 and words in p.stderr, (flags, p.stderr[-500:])


def admin(url: str, method: str, path: str = "", key: str | None = "k", **kw):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return requests.request(method, url + "/admin/models" + path, headers=headers, timeout=300,
                            **kw)


def test_admin_routes_need_an_api_key(multi):
    r = admin(multi.url, "GET", key=None)
    assert r.status_code == 403 and "--api-key" in r.json()["error"], r.text


def test_admin_load_unload_and_a_failed_model(kiln_paths, tmp_path):
    exe, smol = kiln_paths
    late = tmp_path / "late.gguf"  # appears after the start: the retry loads it
    server = KilnServer(exe, smol, [
        "--model", f"smol={smol}:cores=0", "--model", f"late={late}:cores=0",
        "--api-key", "k", "--kv-cache-memory", "0.25", "--model-retry-interval", "0.3"])
    auth = {"Authorization": "Bearer k"}
    try:
        cards = {m["id"]: m for m in admin(server.url, "GET").json()["models"]}
        assert cards["smol"]["state"] == "ready"
        assert cards["late"]["state"] == "failed" and "late.gguf" in cards["late"]["error"]
        r = requests.post(server.url + "/models/late/generate", json={"inputs": "x"},
                          headers=auth, timeout=30)
        assert r.status_code == 503 and "not available" in r.json()["error"], r.text
        assert admin(server.url, "GET", key="wrong").status_code == 401

        # Load at run time; refuse a taken name, a bad source and a bad body.
        r = admin(server.url, "POST", json={"name": "stories", "source": str(STORIES)})
        assert r.status_code == 201 and r.json()["model"]["state"] == "ready", r.text
        assert admin(server.url, "POST", json={"name": "stories",
                                               "source": str(STORIES)}).status_code == 409
        r = admin(server.url, "POST", json={"name": "nope", "source": str(tmp_path / "x.gguf")})
        assert r.status_code == 422 and "x.gguf" in r.json()["error"], r.text
        for body in ({}, {"name": 5, "source": "x"}, {"name": "a/b", "source": "x"}, []):
            assert admin(server.url, "POST", json=body).status_code == 422, body
        assert generate(server.url + "/models/stories/generate", "Once") != ""

        # The failed model loads once its file is there.
        import shutil
        import time
        shutil.copy(STORIES, late)
        deadline = time.time() + 30
        while time.time() < deadline:
            cards = {m["id"]: m for m in admin(server.url, "GET").json()["models"]}
            if cards["late"]["state"] == "ready":
                break
            time.sleep(0.2)
        assert cards["late"]["state"] == "ready", cards["late"]
        assert generate(server.url + "/models/late/generate", "Once") != ""

        # Unload mid-stream: the stream ends with an error event; smol keeps serving.
        r = admin(server.url, "POST", json={"name": "smol2", "source": str(smol), "cores": "0"})
        assert r.status_code == 201, r.text
        stream = requests.post(server.url + "/models/smol2/generate_stream", headers=auth,
                               json={"inputs": "Count to a thousand:",
                                     "parameters": {"max_new_tokens": 4000}},
                               stream=True, timeout=120)
        lines = stream.iter_lines()
        first = next(line for line in lines if line)
        assert b"token" in first
        r = admin(server.url, "DELETE", "/smol2?timeout=0.1")
        assert r.status_code == 200 and r.json() == {"unloaded": "smol2", "drained": False}
        rest = b"\n".join(line for line in lines if line)
        assert b'"error"' in rest, rest[-300:]
        assert "smol2" not in {m["id"] for m in admin(server.url, "GET").json()["models"]}
        r = requests.post(server.url + "/models/smol2/generate", json={"inputs": "x"},
                          headers=auth, timeout=30)
        assert r.status_code == 404
        assert admin(server.url, "DELETE", "/smol2").status_code == 404
        assert generate_auth(server.url + "/generate", "The capital of France is") != ""
        assert server.alive(), server.stderr()
    finally:
        assert server.stop() == 0, server.stderr()


def generate_auth(url: str, prompt: str) -> str:
    r = requests.post(url, json={"inputs": prompt, "parameters": {"max_new_tokens": 4}},
                      headers={"Authorization": "Bearer k"}, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()["generated_text"]


def test_models_from_a_config_file(kiln_paths, minilm, tmp_path):
    import json
    exe, smol = kiln_paths
    config = tmp_path / "models.json"
    config.write_text(json.dumps({"models": [
        {"name": "stories", "source": str(STORIES), "cores": "0"},
        {"name": "minilm", "source": str(minilm), "kv_cache_dtype": "f16"}]}))
    server = KilnServer(exe, smol, ["--config", str(config), "--kv-cache-memory", "0.1"])
    try:
        data = requests.get(server.url + "/v1/models", timeout=10).json()["data"]
        assert [m["id"] for m in data] == ["stories", "minilm"]
        assert data[0]["cores"] == [0]
        assert generate(server.url + "/generate", "Once") != ""
    finally:
        assert server.stop() == 0, server.stderr()
    bad = tmp_path / "bad.json"
    for text, words in (('{"models": []}', "no models"), ('{"models": [{"name": "a"}]}',
                                                         'without "source"'), ("[1]", "expected")):
        bad.write_text(text)
        import subprocess
        p = subprocess.run([str(exe), "serve", "--config", str(bad)], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode != 0 and words in p.stderr, (text, p.stderr[-300:])
