"""`kiln serve` of encoder models (issue #26): a real sentence embedder (all-MiniLM-L6-v2, from
PyPI) against transformers' BertModel with sentence-transformers' recipe (mean pooling, L2
norm), per vector cosine >= 0.9999; the openai client's embeddings.create unchanged (float and
base64); TEI's /embed, /rerank and /predict against transformers on random-weight cross-encoders
(BERT and RoBERTa heads); /qa against transformers.pipeline("question-answering") on a
random-weight BertForQuestionAnswering (same spans and answers); bad input answered with clear
errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import requests

from conftest import KilnServer, require_module

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A man is playing a guitar on stage.",
    "Paris is the capital of France.",
    "Embeddings map text to vectors; similar texts land close together.",
    "naïve café owners prefer crème brûlée",
    "东京是日本的首都",
    "short",
    "Numbers like 3.14159 and 2,718 and dates such as 2026-12-07 are tokenized too.",
    " leading and trailing spaces   ",
    "A much longer sentence that goes on for a while, describing a quiet village by the sea "
    "where fishermen repair their nets every morning before the sun rises over the hills.",
]

TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "vocab.txt",
                   "special_tokens_map.json"]


def random_model(folder: Path, tokenizer_from: Path, kind: str) -> Path:
    """A random-weight model of transformers' own classes, with MiniLM's BERT tokenizer."""
    torch = require_module("torch")
    transformers = require_module("transformers")
    torch.manual_seed({"qa": 1, "rerank": 2, "roberta": 3}[kind])
    common = dict(vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=128, max_position_embeddings=512)
    if kind == "qa":
        model = transformers.BertForQuestionAnswering(transformers.BertConfig(**common))
    elif kind == "rerank":
        model = transformers.BertForSequenceClassification(
            transformers.BertConfig(num_labels=1, **common))
    else:
        model = transformers.RobertaForSequenceClassification(transformers.RobertaConfig(
            num_labels=3, type_vocab_size=1, pad_token_id=0, hidden_act="gelu_new",
            id2label={0: "negative", 1: "neutral", 2: "positive"},
            label2id={"negative": 0, "neutral": 1, "positive": 2},
            **{**common, "max_position_embeddings": 514}))
    model.eval()
    model.save_pretrained(folder, safe_serialization=True)
    for name in TOKENIZER_FILES:
        if (tokenizer_from / name).is_file():
            shutil.copy(tokenizer_from / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def embed_server(kiln_paths, minilm):
    server = KilnServer(kiln_paths[0], minilm, [])
    yield server
    assert server.stop() == 0, server.stderr()


def reference_embeddings(folder: Path, texts: list[str]):
    """sentence-transformers' recipe on transformers' BertModel: mean pooling over the
    attention mask, then L2 normalization; inputs truncated at 256 tokens as its config says."""
    torch = require_module("torch")
    transformers = require_module("transformers")
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModel.from_pretrained(folder).eval()
    enc = tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).float()
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=-1).numpy()


def cosine(a, b) -> float:
    import numpy as np
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_embed_matches_transformers(embed_server, minilm):
    want = reference_embeddings(minilm, SENTENCES)
    r = requests.post(embed_server.url + "/embed", json={"inputs": SENTENCES}, timeout=60)
    assert r.status_code == 200, r.text
    got = r.json()
    assert len(got) == len(SENTENCES) and all(len(v) == 384 for v in got)
    for text, g, w in zip(SENTENCES, got, want):
        assert cosine(g, w) >= 0.9999, text
    # One at a time: the same vectors as in a batch (padding-free batching changes nothing).
    alone = requests.post(embed_server.url + "/embed", json={"inputs": SENTENCES[3]}).json()
    assert cosine(alone[0], got[3]) >= 0.99999


def test_embed_with_converted_weights(kiln_paths, minilm):
    """--dtype converts the layers at load: f16 stays within 1e-5 of the f32 vectors, q8_0
    (int8 weights and activations) within 1e-3."""
    want = reference_embeddings(minilm, SENTENCES)
    for dtype, floor in (("f16", 0.99999), ("q8_0", 0.999)):
        server = KilnServer(kiln_paths[0], minilm, ["--dtype", dtype])
        try:
            got = requests.post(server.url + "/embed", json={"inputs": SENTENCES},
                                timeout=60).json()
        finally:
            assert server.stop() == 0, server.stderr()
        worst = min(cosine(g, w) for g, w in zip(got, want))
        assert worst >= floor, (dtype, worst)


def test_embed_options(embed_server):
    url = embed_server.url + "/embed"
    raw = requests.post(url, json={"inputs": "hello world", "normalize": False}).json()[0]
    unit = requests.post(url, json={"inputs": "hello world"}).json()[0]
    norm = sum(x * x for x in raw) ** 0.5
    assert abs(norm - 1) > 1e-3 and abs(sum(x * x for x in unit) - 1) < 1e-4
    assert cosine(raw, unit) >= 0.99999
    short = requests.post(url, json={"inputs": "hello world", "dimensions": 64}).json()[0]
    assert len(short) == 64 and abs(sum(x * x for x in short) - 1) < 1e-4
    long_text = "word " * 400
    r = requests.post(url, json={"inputs": long_text})
    assert r.status_code == 413, r.text
    assert r.json()["error_type"] == "validation" and "must have less than 256 tokens" in r.text
    r = requests.post(url, json={"inputs": long_text, "truncate": True})
    assert r.status_code == 200 and len(r.json()[0]) == 384


def test_openai_client_embeddings(embed_server, minilm):
    require_module("openai")
    import openai
    client = openai.OpenAI(base_url=embed_server.url + "/v1", api_key="-")
    want = reference_embeddings(minilm, SENTENCES[:4])
    # The client asks for base64 by default and decodes it itself.
    r = client.embeddings.create(model="all-MiniLM-L6-v2", input=SENTENCES[:4])
    assert [d.index for d in r.data] == [0, 1, 2, 3]
    for d, w in zip(r.data, want):
        assert cosine(d.embedding, w) >= 0.9999
    assert r.usage.prompt_tokens > 0 and r.usage.total_tokens == r.usage.prompt_tokens
    f = client.embeddings.create(model="all-MiniLM-L6-v2", input="Paris is the capital of France.",
                                 encoding_format="float")
    assert cosine(f.data[0].embedding, want[2]) >= 0.9999
    models = client.models.list()
    assert models.data and models.data[0].id


def test_embeddings_bad_input(embed_server):
    url = embed_server.url
    cases = [
        ("/v1/embeddings", {"input": ""}, 422),
        ("/v1/embeddings", {"input": []}, 422),
        ("/v1/embeddings", {"input": "x", "encoding_format": "int8"}, 422),
        ("/v1/embeddings", {"input": "x", "dimensions": 4096}, 422),
        ("/v1/embeddings", {"input": [[1, 2, 99999999]]}, 422),
        ("/v1/embeddings", {"input": "word " * 400}, 413),
        ("/embed", {"inputs": ""}, 400),
        ("/embed", {"inputs": []}, 400),
        ("/embed", {"inputs": ["a"] * 33}, 413),
        ("/embed", {"inputs": 5}, 422),
        ("/embed", {"wrong": "field"}, 422),
        ("/rerank", {"query": "q", "texts": ["a"]}, 400),  # not a classifier
        ("/qa", {"question": "q", "context": "c"}, 400),   # not a QA model
        ("/generate", {"inputs": "hello"}, 400),           # an encoder does not generate
    ]
    for route, body, status in cases:
        r = requests.post(url + route, json=body, timeout=30)
        assert r.status_code == status, (route, body, r.status_code, r.text)
        err = r.json()["error"]
        assert err if isinstance(err, str) else err["message"], r.text
    r = requests.post(url + "/embed", data=b"{not json", timeout=30)
    assert r.status_code == 400
    assert requests.get(url + "/health").status_code == 200


def test_rerank_and_predict_match_transformers(kiln_paths, minilm, tmp_path):
    torch = require_module("torch")
    transformers = require_module("transformers")
    folder = random_model(tmp_path / "rerank", minilm, "rerank")
    server = KilnServer(kiln_paths[0], folder, [])
    try:
        tok = transformers.AutoTokenizer.from_pretrained(folder)
        model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
        query, texts = SENTENCES[2], SENTENCES[:6]
        enc = tok([query] * len(texts), texts, padding=True, return_tensors="pt")
        with torch.no_grad():
            logits = model(**enc).logits[:, 0]
        want = torch.sigmoid(logits).tolist()
        r = requests.post(server.url + "/rerank",
                          json={"query": query, "texts": texts, "return_text": True}, timeout=60)
        assert r.status_code == 200, r.text
        got = r.json()
        assert [g["index"] for g in got] == sorted(range(len(texts)), key=lambda i: -want[i])
        for g in got:
            assert abs(g["score"] - want[g["index"]]) < 1e-4 and g["text"] == texts[g["index"]]
        raw = requests.post(server.url + "/rerank",
                            json={"query": query, "texts": texts, "raw_scores": True}).json()
        for g in raw:
            assert abs(g["score"] - logits[g["index"]].item()) < 1e-4
        pair = requests.post(server.url + "/predict", json={"inputs": [query, texts[0]]}).json()
        assert abs(pair[0]["score"] - want[0]) < 1e-4 and pair[0]["label"] == "LABEL_0"
    finally:
        assert server.stop() == 0, server.stderr()


def test_predict_roberta_matches_transformers(kiln_paths, minilm, tmp_path):
    torch = require_module("torch")
    transformers = require_module("transformers")
    folder = random_model(tmp_path / "roberta", minilm, "roberta")
    server = KilnServer(kiln_paths[0], folder, [])
    try:
        tok = transformers.AutoTokenizer.from_pretrained(folder)
        model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
        texts = SENTENCES[:5]
        enc = tok(texts, padding=True, return_tensors="pt", return_token_type_ids=False)
        with torch.no_grad():
            probs = torch.softmax(model(**enc).logits, -1)
        r = requests.post(server.url + "/predict", json={"inputs": [[t] for t in texts]})
        assert r.status_code == 200, r.text
        for got, want in zip(r.json(), probs):
            assert [g["label"] for g in got] == [model.config.id2label[i]
                                                 for i in want.argsort(descending=True).tolist()]
            for g in got:
                assert abs(g["score"] - want[model.config.label2id[g["label"]]].item()) < 1e-4
    finally:
        assert server.stop() == 0, server.stderr()


QA_CASES = [
    ("Where is the museum?", "The museum is in the old town, next to the river. It opens at nine."),
    ("Who wrote it?", "This letter, written by Ada Lovelace in 1843, describes an engine."),
    ("What is long?", " ".join(f"Sentence number {i} talks about topic {i % 7}." for i in range(90))),
]


def test_qa_matches_transformers_pipeline(kiln_paths, minilm, tmp_path):
    transformers = require_module("transformers")
    folder = random_model(tmp_path / "qa", minilm, "qa")
    pipe = transformers.pipeline("question-answering", model=str(folder), tokenizer=str(folder),
                                 device="cpu")
    server = KilnServer(kiln_paths[0], folder, [])
    try:
        for question, context in QA_CASES:
            for extra in ({}, {"top_k": 3}, {"handle_impossible_answer": True},
                          {"max_seq_len": 64, "doc_stride": 16, "top_k": 2}):
                want = pipe(question=question, context=context, **extra)
                r = requests.post(server.url + "/qa",
                                  json={"question": question, "context": context, **extra})
                assert r.status_code == 200, r.text
                got = r.json()
                want_list = want if isinstance(want, list) else [want]
                got_list = got if isinstance(got, list) else [got]
                assert isinstance(got, list) == isinstance(want, list), (got, want)
                assert [(g["start"], g["end"], g["answer"]) for g in got_list] == \
                    [(w["start"], w["end"], w["answer"]) for w in want_list], (extra, got, want)
                for g, w in zip(got_list, want_list):
                    assert abs(g["score"] - w["score"]) < 1e-4 * max(1.0, w["score"]), (g, w)
        r = requests.post(server.url + "/qa", json={"question": "x " * 500, "context": "c"})
        assert r.status_code == 422, r.text
    finally:
        assert server.stop() == 0, server.stderr()


# Hostile input for the encoder routes (also run against the ASan build in scripts/test.sh):
# every malformed body gets a 4xx, never a 5xx, and the server keeps serving.
ENCODER_BASE = {
    "/v1/embeddings": {"input": "hello", "model": "m"},
    "/embed": {"inputs": "hello"},
    "/rerank": {"query": "q", "texts": ["a", "b"]},
    "/predict": {"inputs": "hello"},
    "/qa": {"question": "q", "context": "c"},
}
ENCODER_BAD = [None, True, -1, 0, 2**31, 2**64, 1.5, 1e308, "", "x" * 5000, "\u0000", "\ud800",
               [], [None], [[]], [[[]]], {}, [1, "a"], ["a"] * 5000, [-5], [2**40],
               [[1, 2], [3]], ["a", "b", "c"], [["a", "b", "c"]], "Left", "Right", "middle"]
ENCODER_FIELDS = ["input", "inputs", "encoding_format", "dimensions", "normalize", "truncate",
                  "truncation_direction", "query", "texts", "raw_scores", "return_text",
                  "question", "context", "top_k", "doc_stride", "max_answer_len", "max_seq_len",
                  "handle_impossible_answer", "prompt_name", "model"]


def hostile_bodies(routes: list[str]) -> list[tuple[str, dict]]:
    """Every bad value in every field for the routes the model serves; for the routes it
    refuses anyway, one bad value per field."""
    out = []
    for route, base in ENCODER_BASE.items():
        values = ENCODER_BAD if route in routes else ENCODER_BAD[::9]
        for field in ENCODER_FIELDS:
            for value in values:
                out.append((route, {**base, field: value}))
    return out


def check_hostile(url: str, cases) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def send(case):
        route, body = case
        try:
            r = requests.post(url + route, json=body, timeout=120)
        except ValueError:  # a body requests cannot encode (a lone surrogate)
            return case, 400, ""
        return case, r.status_code, r.text[:200]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(send, cases))
    bad = [(c, s, t) for c, s, t in results if s >= 500 or s == 0]
    assert not bad, bad[:5]


def test_encoder_hostile_inputs(kiln_paths, minilm, tmp_path):
    qa = random_model(tmp_path / "qa", minilm, "qa")
    rerank = random_model(tmp_path / "rerank", minilm, "rerank")
    served = {minilm: ["/v1/embeddings", "/embed"], qa: ["/qa"], rerank: ["/rerank", "/predict"]}
    for folder, routes in served.items():
        server = KilnServer(kiln_paths[0], folder, ["--max-client-batch-size", "64"])
        try:
            check_hostile(server.url, hostile_bodies(routes))
            # A long context through many windows, a huge top_k, extreme strides.
            long_ctx = "word " * 3000
            for body in ({"question": "what?", "context": long_ctx, "doc_stride": 0},
                         {"question": "what?", "context": long_ctx, "top_k": 64,
                          "max_seq_len": 16, "doc_stride": 1},
                         {"question": "what?", "context": long_ctx, "max_seq_len": 65536}):
                r = requests.post(server.url + "/qa", json=body, timeout=300)
                assert r.status_code < 500, r.text
            assert server.alive(), server.stderr()
            assert requests.get(server.url + "/health", timeout=10).status_code == 200
        finally:
            assert server.stop() == 0, server.stderr()


def test_client_leaving_mid_batch(embed_server):
    """Clients that send large batches and leave before the answer: the server drops their
    queued sequences and keeps serving the others."""
    import socket
    import json as _json
    body = _json.dumps({"inputs": ["a sentence to embed, rather long " * 6] * 32}).encode()
    req = (f"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    for _ in range(20):
        with socket.create_connection(("127.0.0.1", embed_server.port)) as s:
            s.sendall(req)
    r = requests.post(embed_server.url + "/embed", json={"inputs": "still here"}, timeout=120)
    assert r.status_code == 200 and len(r.json()[0]) == 384
    metrics = requests.get(embed_server.url + "/metrics").text
    assert "kiln_encoder_batches_total" in metrics
