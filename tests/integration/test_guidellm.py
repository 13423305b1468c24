"""GuideLLM, the benchmark tool `kiln bench` follows, against the real binary.

1. Issue #5 acceptance: GuideLLM runs a 20-second synchronous + throughput benchmark with
   synthetic data against `kiln serve`, with zero failed requests.
2. Issue #7 cross-checks: `kiln bench` and GuideLLM measure the same server and must agree
   within 10% (KILN_BENCH_XCHECK_TOLERANCE) on TTFT median, ITL median and output tokens/s:
   a. GuideLLM's mock server (fixed latencies): both tools at once, each at its own pace;
   b. `kiln serve`: both tools at the same time, each with one synchronous stream, so that both
      see the same server, batch and machine load (this machine is shared: load measured a
      minute apart differs by far more than 10%).
   A disagreement, or GuideLLM hanging (a known GuideLLM race), is measured again (three
   attempts in all).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import free_port, metric
from guidellm_tools import (benchmarks, guidellm_binary, guidellm_env, raise_priority,
                            run_guidellm, start_guidellm, summary, write_tokenizer)

TOLERANCE = float(os.environ.get("KILN_BENCH_XCHECK_TOLERANCE", "0.10"))


@pytest.fixture(scope="module")
def smollm2_tokenizer(kiln_paths, tmp_path_factory) -> Path:
    return write_tokenizer(kiln_paths[1], tmp_path_factory.mktemp("smollm2-tokenizer"))


def server_metrics(url: str) -> str:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        return r.read().decode()


def model_id(url: str) -> str:
    with urllib.request.urlopen(url + "/v1/models", timeout=10) as r:
        return json.loads(r.read())["data"][0]["id"]


# ---------------------------------------------------------------- 1. acceptance


def test_synchronous_and_throughput_with_synthetic_data(start_server, smollm2_tokenizer,
                                                        tmp_path):
    server = start_server("--max-total-tokens", "2048")
    raise_priority(server.proc.pid)
    report = tmp_path / "guidellm.json"
    # sweep of size 2 = synchronous, then throughput; chat completions (GuideLLM's default).
    run_guidellm([
        "--backend", f"kind=openai_http,target={server.url}",
        "--profile", "kind=sweep,sweep_size=2,max_concurrency=4",
        "--constraint", "kind=max_duration,seconds=20",
        "--data", "kind=synthetic_text,prompt_tokens=32,output_tokens=16",
        "--tokenizer", f"kind=huggingface_auto,model={smollm2_tokenizer}",
        "--output", f"kind=json,path={report}"])
    runs = benchmarks(report)
    assert [b["config"]["strategy"]["type_"] for b in runs] == ["synchronous", "throughput"]
    for b in runs:
        totals = b["metrics"]["request_totals"]
        assert totals["errored"] == 0, totals
        assert totals["successful"] >= 1, totals
        assert b["duration"] == pytest.approx(20, abs=1)
        tokens = b["metrics"]["output_token_count"]["successful"]
        assert tokens["min"] == tokens["max"] == 16  # max_tokens + ignore_eos honoured


# ---------------------------------------------------------------- 2. cross-checks

def write_prompts(path: Path, seed: int, output_tokens: int | range,
                  prompt_words: int = 48) -> Path:
    """Prompts of identical token counts for both tools, never the same text: each is a shuffle
    of one set of common words (each its own token, so the count does not depend on the order),
    seeded per tool, so that one tool's prompts never hit the prefix cache the other filled.
    Output lengths are drawn from a range by the same seeded generator: were they one sequence
    for both tools, two synchronous streams that once ended in the same server step would stay
    in lockstep, their next requests arriving together and one always prefilled after the other,
    and that tool's TTFT would carry the other's prefill (seen: 164 vs 98 ms, ITL 12 vs 18)."""
    lengths = output_tokens if isinstance(output_tokens, range) else range(output_tokens,
                                                                           output_tokens + 1)
    words = ("the of and to in is that for it as was with be by on not he this are or his "
             "from at which but have an had they you were her all she there would their we him "
             "been has when who will more no if out so said what up its about into than them")
    words = (words.split() * (prompt_words // 48 + 1))[:prompt_words]
    rng = random.Random(seed)
    with path.open("w") as f:
        for _ in range(400):
            rng.shuffle(words)
            f.write(json.dumps({"prompt": " ".join(words),
                                "output_tokens_count": rng.choice(lengths)}) + "\n")
    return path


def guidellm_args(target: str, model: str, data: Path, report: Path, seconds: float,
                  warmup: float = 0) -> list[str]:
    """A synchronous run of `seconds` on prompts from `data`. No --tokenizer: the server reports
    token counts, and with one GuideLLM spends ~20 ms of each request's TTFT tokenizing."""
    profile = "kind=synchronous"
    if warmup:
        profile += f",warmup={warmup},cooldown={warmup}"
    return ["--backend", f"kind=openai_http,target={target},model={model},"
                         "request_format=/v1/completions",
            "--profile", profile,
            "--constraint", f"kind=max_duration,seconds={seconds + 2 * warmup}",
            "--data", f"kind=json_file,path={data}",
            "--output", f"kind=json,path={report}"]


def kiln_bench(kiln: Path, target: str, model: str, data: Path, report: Path,
               seconds: float) -> dict[str, float]:
    result = subprocess.run(
        [str(kiln), "bench", "--target", target, "--model", model, "--profile", "synchronous",
         "--max-seconds", str(seconds), "--data", str(data), "--output", str(report),
         "--no-progress"], capture_output=True, text=True, timeout=seconds + 120,
        preexec_fn=raise_priority)
    assert result.returncode == 0, f"kiln bench failed:\n{result.stdout}\n{result.stderr}"
    (b,) = json.loads(report.read_text())["benchmarks"]
    assert b["request_totals"]["errored"] == 0, b["request_totals"]
    m = b["metrics"]
    return {"ttft": m["time_to_first_token_ms"]["successful"]["median"],
            "itl": m["inter_token_latency_ms"]["successful"]["median"],
            "tps": m["output_tokens_per_second"]}


def agree(ours: dict, theirs: dict) -> bool:
    return all(ours[k] == pytest.approx(theirs[k], rel=TOLERANCE) for k in ("ttft", "itl", "tps"))


def assert_agree(ours: dict, theirs: dict) -> None:
    print(f"kiln bench {ours}\nguidellm   {theirs}")
    for key in ("ttft", "itl", "tps"):
        assert ours[key] == pytest.approx(theirs[key], rel=TOLERANCE), (
            f"{key}: kiln bench {ours[key]:.2f} vs guidellm {theirs[key]:.2f} "
            f"(kiln bench {ours}, guidellm {theirs})")


def test_agrees_with_guidellm_on_its_mock_server(kiln_paths, tmp_path):
    """Fixed latencies, large against a busy machine's noise and independent of the load, so
    kiln bench runs while GuideLLM starts up and measures (no need to line the windows up)."""
    kiln, _ = kiln_paths
    port, tokens, seconds = free_port(), 8, 15
    mock = subprocess.Popen(
        [str(guidellm_binary()), "mock-server", "--port", str(port), "--ttft-ms", "200",
         "--itl-ms", "40", "--output-tokens", str(tokens)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=guidellm_env(),
        preexec_fn=raise_priority)
    try:
        target = f"http://127.0.0.1:{port}"
        wait_ready(target + "/v1/models", mock)
        data = {name: write_prompts(tmp_path / f"{name}.jsonl", seed, tokens)
                for seed, name in enumerate(("kiln", "guidellm"))}

        def measure(folder: Path) -> tuple[dict, dict | None]:
            guidellm = start_guidellm(
                guidellm_args(target, "mock", data["guidellm"], folder / "g.json", seconds),
                folder / "guidellm.log")
            try:
                ours = kiln_bench(kiln, target, "mock", data["kiln"], folder / "k.json", seconds)
            finally:
                theirs = guidellm_summary(guidellm, folder)
            return ours, theirs

        ours = agree_in_one_of_three(measure, tmp_path)
        assert ours["ttft"] >= 200 and ours["itl"] >= 39
    finally:
        mock.terminate()
        mock.wait(15)


def guidellm_summary(guidellm: subprocess.Popen, folder: Path,
                     timeout: float = 120) -> dict | None:
    """The summary of a GuideLLM run in `folder` once it exits; None if it has not exited
    `timeout` s after its measuring window (then it is killed). GuideLLM itself can hang
    between or after its benchmarks (vllm-project/guidellm#431, #1152)."""
    log = folder / "guidellm.log"
    try:
        code = guidellm.wait(timeout)
    except subprocess.TimeoutExpired:
        guidellm.kill()
        guidellm.wait()
        print(f"GuideLLM did not exit within {timeout} s; its log ends:\n{log.read_text()[-2000:]}")
        return None
    assert code == 0, log.read_text()[-3000:]
    (theirs,) = benchmarks(folder / "g.json")
    assert theirs["metrics"]["request_totals"]["errored"] == 0
    return summary(theirs)


def agree_in_one_of_three(measure, tmp_path: Path) -> dict:
    """measure(folder) -> (kiln bench's figures, GuideLLM's or None if it hung). A shared
    machine's load can change between the two tools' samples however they are lined up, and
    GuideLLM can hang: a disagreement or hang gets another, independent measurement, up to
    three, before the test fails. Returns kiln bench's figures of the agreeing attempt."""
    for attempt in (1, 2, 3):
        folder = tmp_path / f"attempt{attempt}"
        folder.mkdir()
        ours, theirs = measure(folder)
        if theirs is not None and agree(ours, theirs):
            break
        print(f"attempt {attempt}: kiln bench {ours}, guidellm {theirs}")
    assert theirs is not None, "GuideLLM hung in the last attempt"
    assert_agree(ours, theirs)
    return ours


def wait_ready(url: str, proc: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        assert proc.poll() is None, f"exited with {proc.returncode} before answering {url}"
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


def test_agrees_with_guidellm_on_kiln_serve(start_server, kiln_paths, tmp_path):
    """Each tool runs one stream (synchronous) of 48- to 240-token prompts (sized by a warm-up
    to a TTFT of about 120 ms) and 8 to 16 output tokens: TTFT large against GuideLLM's own
    overhead in it (3-9 ms measured beside kiln bench), yet many samples, as on a busy
    machine one request's latency varies by 2x. (With several streams per tool the comparison
    measures how each tool spaces the sends of its streams, and GuideLLM's TTFT grows with its
    streams by more than 10%.) GuideLLM measures `seconds` between a `warmup` and a `cooldown` of
    its own; kiln bench starts half a warmup after GuideLLM's first request and runs `seconds +
    warmup`, so each tool's measured window lies inside the other's traffic.

    Every attempt sends prompts of its own: a repeated prompt is answered from the prefix cache,
    so a second attempt on the first's prompts would measure another workload."""
    kiln, _ = kiln_paths
    server = start_server("--max-total-tokens", "2048")
    raise_priority(server.proc.pid)
    model, tokens = model_id(server.url), range(8, 17)
    write_prompts(tmp_path / "warmup.jsonl", 0, tokens)
    warm = kiln_bench(kiln, server.url, model, tmp_path / "warmup.jsonl", tmp_path / "w.json", 3)
    words = prompt_words_for_ttft(warm["ttft"])
    print(f"warm-up TTFT {warm['ttft']:.1f} ms with 48-word prompts: {words} words")
    seeds = itertools.count(1)

    def measure(folder: Path) -> tuple[dict, dict | None]:
        data = {name: write_prompts(folder / f"{name}.jsonl", next(seeds), tokens, words)
                for name in ("kiln", "guidellm")}
        return measure_side_by_side(kiln, server.url, model, data, folder)

    agree_in_one_of_three(measure, tmp_path)


def prompt_words_for_ttft(ttft_ms: float, target_ms: float = 120) -> int:
    """Prompt words (48 to 240) that make one stream's TTFT about `target_ms`, from the TTFT of
    48-word prompts. GuideLLM's TTFT carries 3-9 ms of its own (Python) overhead that kiln
    bench's does not: at the ~50 ms TTFT of 48-word prompts on a fast machine that alone is more
    than the 10% tolerance (CI: 47.4 vs 54.8 ms, ITL within 0.5%)."""
    return int(min(240, max(48, 48 * target_ms / max(ttft_ms, 1.0))))


def measure_side_by_side(kiln: Path, url: str, model: str, data: dict[str, Path], folder: Path,
                         seconds: float = 25, warmup: float = 4) -> tuple[dict, dict | None]:
    """One synchronous stream per tool, at the same time; (kiln bench, GuideLLM or None)."""
    guidellm = start_guidellm(
        guidellm_args(url, model, data["guidellm"], folder / "g.json", seconds, warmup),
        folder / "guidellm.log")
    try:
        while metric(server_metrics(url), "kiln_requests_in_flight") == 0:
            assert guidellm.poll() is None, (folder / "guidellm.log").read_text()[-3000:]
            time.sleep(0.05)
        time.sleep(warmup / 2)
        ours = kiln_bench(kiln, url, model, data["kiln"], folder / "k.json", seconds + warmup)
    finally:
        theirs = guidellm_summary(guidellm, folder)
    return ours, theirs
