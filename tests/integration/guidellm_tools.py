"""Helpers to drive GuideLLM (https://github.com/vllm-project/guidellm) from the tests: where its
CLI is, the environment it runs in, a local tokenizer folder for SmolLM2, and its JSON report.

scripts/setup.sh installs guidellm into <repo>/.venv-guidellm (pinned in requirements-guidellm.txt).
KILN_GUIDELLM overrides the executable.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from conftest import REPO, unavailable


def guidellm_binary() -> Path:
    for candidate in (
        os.environ.get("KILN_GUIDELLM"),
        str(REPO / ".venv-guidellm" / "bin" / "guidellm"),
        shutil.which("guidellm"),
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    unavailable("guidellm is not installed (bash scripts/setup.sh, or set KILN_GUIDELLM)")


def guidellm_env() -> dict[str, str]:
    """One worker process: each one is a Python interpreter that imports torch, seconds of
    start-up on a small machine, and one handles our few streams easily. No network."""
    env = dict(os.environ)
    env.update({"GUIDELLM__MAX_WORKER_PROCESSES": "1", "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    return env


# Nice value of the processes that take part in a measurement. This machine may be shared with
# builds: at the default priority a server on one core gets a fraction of it that changes by
# the second, and two tools measured a minute apart (or even together, on a few dozen samples)
# differ by more than the 10% the cross-checks allow. Needs root (CI runs as root); else ignored.
MEASURE_NICE = -10


def raise_priority(pid: int = 0) -> None:
    """Gives every thread of process `pid` (0: this one) the MEASURE_NICE priority, if allowed."""
    tasks = [pid] if pid == 0 else [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
    for task in tasks:
        try:
            os.setpriority(os.PRIO_PROCESS, task, MEASURE_NICE)
        except OSError:
            return


def run_guidellm(args: list[str], timeout: float = 400) -> subprocess.CompletedProcess:
    result = subprocess.run([str(guidellm_binary()), "run", *args, "--disable-progress"],
                            capture_output=True, text=True, timeout=timeout, env=guidellm_env(),
                            preexec_fn=raise_priority)
    assert result.returncode == 0, (
        f"guidellm failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result


def start_guidellm(args: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen([str(guidellm_binary()), "run", *args, "--disable-progress"],
                            stdout=log.open("w"), stderr=subprocess.STDOUT, env=guidellm_env(),
                            preexec_fn=raise_priority)


def write_tokenizer(gguf: Path, folder: Path) -> Path:
    """A Hugging Face tokenizer folder (tokenizer.json, chat template) converted from the GGUF's
    vocabulary by transformers in guidellm's venv: GuideLLM sizes synthetic prompts with it."""
    python = guidellm_binary().parent / "python"
    script = ("import sys; from transformers import AutoTokenizer; "
              "t = AutoTokenizer.from_pretrained(sys.argv[1], gguf_file=sys.argv[2]); "
              "t.save_pretrained(sys.argv[3])")
    result = subprocess.run([str(python), "-c", script, str(gguf.parent), gguf.name, str(folder)],
                            capture_output=True, text=True, timeout=300, env=guidellm_env())
    assert result.returncode == 0, f"tokenizer conversion failed:\n{result.stderr[-3000:]}"
    assert (folder / "tokenizer.json").is_file()
    return folder


def benchmarks(report: Path) -> list[dict]:
    return json.loads(report.read_text())["benchmarks"]


def summary(benchmark: dict) -> dict[str, float]:
    """TTFT median, ITL median (ms) and output tokens/s of one GuideLLM benchmark."""
    m = benchmark["metrics"]
    return {
        "ttft": m["time_to_first_token_ms"]["successful"]["median"],
        "itl": m["inter_token_latency_ms"]["successful"]["median"],
        "tps": m["output_tokens_per_second"]["successful"]["mean"],
    }
