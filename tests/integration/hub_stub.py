"""A loopback stand-in for the Hugging Face Hub, enough for huggingface_hub 0.36's
snapshot_download / hf_hub_download, serving local files; and a tiny random-weight Llama folder.

What the library asks (read from its source: hf_api.py model_info, file_download.py
get_hf_file_metadata / http_get):
  GET  /api/models/{repo}/revision/{quote(rev, safe='')}  -> JSON with "id", "sha", "siblings"
  HEAD /{repo}/resolve/{quote(rev, safe='')}/{file}       -> X-Repo-Commit, ETag (the blob's
       name in the cache; X-Linked-Etag wins when present, as for LFS files) and X-Linked-Size /
       Content-Length
  GET  the same URL                                       -> the bytes
A revision is a ref of the repo or one of its commits. No X-Xet-* headers are sent, so the
library takes the plain HTTP path.

repos = {repo_id: {"refs": {name: commit}, "commits": {commit: {path_in_repo: local_file}}}}
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

CHUNK = 1 << 20


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


class HubStub:
    def __init__(self, repos: dict):
        self.repos = repos
        self.etags: dict[Path, str] = {}
        self.requests: list[tuple[str, str]] = []
        handler = type("Handler", (_Handler,), {"hub": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "HubStub":
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()

    def commit(self, repo: str, revision: str) -> str | None:
        r = self.repos.get(repo)
        if r is None:
            return None
        if revision in r["commits"]:
            return revision
        return r["refs"].get(revision)

    def etag(self, path: Path) -> str:
        if path not in self.etags:  # LFS files' etag is their sha256, so equal files share a blob
            self.etags[path] = _sha256(path)
        return self.etags[path]


class _Handler(BaseHTTPRequestHandler):
    hub: HubStub

    def log_message(self, *args):  # keep pytest's output clean
        pass

    def do_GET(self):
        self._route(send_body=True)

    def do_HEAD(self):
        self._route(send_body=False)

    def _route(self, send_body: bool):
        path = urlsplit(self.path).path
        self.hub.requests.append((self.command, path))
        if path.startswith("/api/models/") and "/revision/" in path:
            repo, rev = path[len("/api/models/"):].split("/revision/", 1)
            return self._repo_info(unquote(repo), unquote(rev))
        if "/resolve/" in path:
            repo, rest = path[1:].split("/resolve/", 1)
            rev, _, file = rest.partition("/")
            return self._file(unquote(repo), unquote(rev), unquote(file), send_body)
        self._error(404, "RepoNotFound", "unknown route")

    def _error(self, status: int, code: str, message: str, commit: str | None = None):
        body = json.dumps({"error": message}).encode()
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        if commit:
            self.send_header("X-Repo-Commit", commit)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _repo_info(self, repo: str, rev: str):
        commit = self.hub.commit(repo, rev)
        if commit is None:
            code = "RepoNotFound" if repo not in self.hub.repos else "RevisionNotFound"
            return self._error(404, code, f"{repo}@{rev} not found")
        files = self.hub.repos[repo]["commits"][commit]
        body = json.dumps({"id": repo, "modelId": repo, "sha": commit, "private": False,
                           "siblings": [{"rfilename": f} for f in sorted(files)]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _file(self, repo: str, rev: str, file: str, send_body: bool):
        commit = self.hub.commit(repo, rev)
        if commit is None:
            return self._error(404, "RevisionNotFound", f"{repo}@{rev} not found")
        local = self.hub.repos[repo]["commits"][commit].get(file)
        if local is None:
            return self._error(404, "EntryNotFound", f"{file} not in {repo}", commit)
        size = local.stat().st_size
        etag = f'"{self.hub.etag(local)}"'
        self.send_response(200)
        self.send_header("X-Repo-Commit", commit)
        self.send_header("ETag", etag)
        self.send_header("X-Linked-Etag", etag)
        self.send_header("X-Linked-Size", str(size))
        self.send_header("Content-Length", str(size))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if send_body:
            with open(local, "rb") as f:
                for block in iter(lambda: f.read(CHUNK), b""):
                    self.wfile.write(block)


def _write_safetensors(path: Path, tensors: dict):
    """The safetensors layout: u64 header size, JSON header (padded to 8 bytes), raw data."""
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name, array in tensors.items():
        data = array.astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_tiny_llama(folder: Path) -> Path:
    """A 1-layer Llama with random weights (seeded): config.json + model.safetensors."""
    import numpy as np

    vocab, hidden, inter, heads, kv_heads = 64, 32, 64, 2, 1
    head_dim = hidden // heads
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": vocab,
        "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": 1,
        "num_attention_heads": heads, "num_key_value_heads": kv_heads,
        "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2,
        "torch_dtype": "float32"}))
    rng = np.random.default_rng(25)
    shapes = {
        "model.embed_tokens.weight": (vocab, hidden),
        "model.layers.0.input_layernorm.weight": (hidden,),
        "model.layers.0.self_attn.q_proj.weight": (heads * head_dim, hidden),
        "model.layers.0.self_attn.k_proj.weight": (kv_heads * head_dim, hidden),
        "model.layers.0.self_attn.v_proj.weight": (kv_heads * head_dim, hidden),
        "model.layers.0.self_attn.o_proj.weight": (hidden, heads * head_dim),
        "model.layers.0.post_attention_layernorm.weight": (hidden,),
        "model.layers.0.mlp.gate_proj.weight": (inter, hidden),
        "model.layers.0.mlp.up_proj.weight": (inter, hidden),
        "model.layers.0.mlp.down_proj.weight": (hidden, inter),
        "model.norm.weight": (hidden,),
    }
    tensors = {name: (rng.uniform(0.5, 1.5, shape) if len(shape) == 1
                      else rng.normal(0.0, 0.1, shape)) for name, shape in shapes.items()}
    _write_safetensors(folder / "model.safetensors", tensors)
    return folder
