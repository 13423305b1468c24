"""Kiln's chat-template renderer against jinja2 as transformers' apply_chat_template runs it.

Every template in tests/tokenizer/data/templates is rendered for a set of conversations (system
prompts, multi-turn, generation prompt on and off, tools, tool calls and results, thinking,
roles that break the template's rules) by jinja2 configured like transformers
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, its tojson,
raise_exception and strftime_now) and by Kiln's render_template tool. The outputs must be
identical, or both must fail (with the same message when the template raised it).

The tool is $KILN_RENDER_TEMPLATE, else <build>/tests/kiln_render_template with <build> from
$KILN_BUILD_DIR (default <repo>/build), else the newest build*/**/kiln_render_template. Without
it (or jinja2) the tests skip, or fail under KILN_GOLDEN_STRICT=1 (see conftest.py).
"""

import copy
import glob
import json
import os
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from conftest import require_module, unavailable

jinja2 = require_module("jinja2")
import jinja2.ext  # noqa: E402
import jinja2.nodes  # noqa: E402
from jinja2.ext import loopcontrols  # noqa: E402
from jinja2.sandbox import ImmutableSandboxedEnvironment  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "tests" / "tokenizer" / "data" / "templates"


def find_tool():
    path = os.environ.get("KILN_RENDER_TEMPLATE")
    if path:
        return path
    build = Path(os.environ.get("KILN_BUILD_DIR") or REPO / "build")
    if not build.is_absolute():
        build = REPO / build
    if (build / "tests" / "kiln_render_template").is_file():
        return str(build / "tests" / "kiln_render_template")
    found = sorted(glob.glob(str(REPO / "build*" / "**" / "kiln_render_template"), recursive=True),
                   key=os.path.getmtime)
    return found[-1] if found else None


class GenerationTag(jinja2.ext.Extension):
    """transformers' AssistantTracker as far as rendering goes: {% generation %} keeps its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        call = self.call_method("_generation_support")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def transformers_env():
    """jinja2 environment as transformers' _compile_jinja_template builds it."""

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. \"Paris\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current time in a time zone.",
        "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]},
    },
}


def tool_call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


SYSTEM = {"role": "system", "content": "You are a helpful assistant. Answer briefly."}
U1 = {"role": "user", "content": "Hello! What's the capital of France?"}
A1 = {"role": "assistant", "content": "The capital of France is Paris."}
U2 = {"role": "user", "content": "  And of Japan? Answer with \"quotes\", 'apostrophes' & <tags>.\n"}
A2 = {"role": "assistant", "content": "Tokyo — 東京. ✓"}
U_TOOL = {"role": "user", "content": "What's the weather in Paris?"}
CALL_DICT = {"role": "assistant", "content": "",
             "tool_calls": [tool_call("call00001", "get_weather", {"city": "Paris", "unit": "celsius"})]}
CALL_STR = {"role": "assistant", "content": None,
            "tool_calls": [tool_call("call00001", "get_weather", "{\"city\": \"Paris\"}")]}
CALL_TWO = {"role": "assistant", "content": None,
            "tool_calls": [tool_call("call00001", "get_weather", {"city": "Paris"}),
                           tool_call("call00002", "get_time", {"tz": "Europe/Paris"})]}
RESULT = {"role": "tool", "tool_call_id": "call00001", "name": "get_weather",
          "content": "{\"temperature\": 21, \"sky\": \"clear\"}"}
RESULT2 = {"role": "tool", "tool_call_id": "call00002", "name": "get_time", "content": "14:05"}
A_TOOL = {"role": "assistant", "content": "It is 21°C and clear in Paris."}
THINK = {"role": "assistant", "content": "<think>\nThe user greets me.\n</think>\n\nHi! How can I help?"}

# (name, messages, add_generation_prompt, tools, extra template kwargs)
CONVERSATIONS = [
    ("user only", [U1], True, None, {}),
    ("system multi-turn", [SYSTEM, U1, A1, U2], True, None, {}),
    ("multi-turn ending with assistant", [U1, A1, U2, A2], False, None, {}),
    ("system, no generation prompt", [SYSTEM, U1, A1], False, None, {}),
    ("three turns", [U1, A1, U2], True, None, {}),
    ("unicode and whitespace", [U2], False, None, {}),
    ("roles do not alternate", [U1, U2], True, None, {}),
    ("assistant first", [A1, U1], True, None, {}),
    ("tools offered", [SYSTEM, U_TOOL], True, [WEATHER_TOOL, TIME_TOOL], {}),
    ("tool call and result (dict arguments)", [U_TOOL, CALL_DICT, RESULT, A_TOOL], False,
     [WEATHER_TOOL], {}),
    ("tool call and result (string arguments)", [SYSTEM, U_TOOL, CALL_STR, RESULT], True,
     [WEATHER_TOOL], {}),
    ("two tool calls", [U_TOOL, CALL_TWO, RESULT, RESULT2], True, [WEATHER_TOOL, TIME_TOOL], {}),
    ("thinking in history", [U1, THINK, U2], True, None, {}),
    ("empty messages", [], True, None, {}),
]

# Keyword arguments some templates read (reasoning switches, dates, tool placement).
EXTRA_KWARGS = {
    "qwen3": [("thinking off", [U1, THINK, U2], True, None, {"enable_thinking": False}),
              ("thinking off with tools", [SYSTEM, U_TOOL], True, [WEATHER_TOOL],
               {"enable_thinking": False})],
    "smollm3": [("no think", [SYSTEM, U1], True, None, {"enable_thinking": False}),
                ("xml tools", [U_TOOL], True, [WEATHER_TOOL], {"xml_tools": [WEATHER_TOOL]})],
    "llama3_1": [("tools in system", [SYSTEM, U_TOOL], True, [WEATHER_TOOL],
                  {"tools_in_user_message": False, "date_string": "01 Jan 2025"}),
                 ("builtin tools", [U_TOOL], True, [WEATHER_TOOL],
                  {"builtin_tools": ["brave_search", "wolfram_alpha"]})],
    "llama3_2": [("date", [SYSTEM, U1], True, None, {"date_string": "26 Jul 2024"})],
    "deepseek_r1": [("thinking off", [U1], True, None, {"enable_thinking": False})],
}

SPECIAL_TOKENS = {
    "llama3_1": ("<|begin_of_text|>", "<|eot_id|>"),
    "llama3_2": ("<|begin_of_text|>", "<|eot_id|>"),
    "qwen2_5": ("", "<|im_end|>"),
    "qwen3": ("", "<|im_end|>"),
    "gemma2": ("<bos>", "<eos>"),
    "phi3_5": ("<s>", "<|endoftext|>"),
    "smollm2": ("<|im_start|>", "<|im_end|>"),
    "smollm3": ("<|im_start|>", "<|im_end|>"),
    "deepseek_v2": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "deepseek_v3": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "deepseek_r1": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
}


def template_names():
    return sorted(p.stem for p in TEMPLATES.glob("*.jinja"))


def build_cases():
    cases = []
    for name in template_names():
        bos, eos = SPECIAL_TOKENS.get(name, ("<s>", "</s>"))
        for title, messages, agp, tools, extra in CONVERSATIONS + EXTRA_KWARGS.get(name, []):
            context = {"messages": copy.deepcopy(messages), "tools": copy.deepcopy(tools),
                       "documents": None, "add_generation_prompt": agp, "bos_token": bos,
                       "eos_token": eos, **copy.deepcopy(extra)}
            cases.append((name, title, context))
    return cases


CASES = build_cases()


def render_jinja2(env, source, context):
    try:
        return {"ok": True, "output": env.from_string(source).render(**context)}
    except jinja2.exceptions.TemplateError as e:
        # raise_exception raises the base TemplateError; jinja2's own errors are subclasses.
        raised = type(e) is jinja2.exceptions.TemplateError
        return {"ok": False, "raised": raised, "message": str(e)}
    except Exception as e:  # noqa: BLE001 - TypeError etc. from the template's expressions
        return {"ok": False, "raised": False, "message": f"{type(e).__name__}: {e}"}


@pytest.fixture(scope="module")
def kiln_results():
    tool = find_tool()
    if not tool or not os.path.exists(tool):
        unavailable("kiln_render_template not built (build target kiln_render_template or set "
                    "KILN_RENDER_TEMPLATE)")
    batch = [{"template": (TEMPLATES / f"{name}.jinja").read_text(encoding="utf-8"), "context": ctx}
             for name, _, ctx in CASES]
    proc = subprocess.run([tool], input=json.dumps(batch).encode(), capture_output=True,
                          timeout=120, check=True)
    results = json.loads(proc.stdout)
    assert len(results) == len(CASES)
    return {(name, title): r for (name, title, _), r in zip(CASES, results)}


@pytest.fixture(scope="module")
def env():
    return transformers_env()


def test_every_template_has_enough_conversations():
    counts = {}
    for name, _, _ in CASES:
        counts[name] = counts.get(name, 0) + 1
    assert len(counts) >= 15
    assert min(counts.values()) >= 6


@pytest.mark.parametrize("name,title,context", CASES, ids=[f"{n}: {t}" for n, t, _ in CASES])
def test_matches_transformers(name, title, context, env, kiln_results):
    source = (TEMPLATES / f"{name}.jinja").read_text(encoding="utf-8")
    want = render_jinja2(env, source, copy.deepcopy(context))
    got = kiln_results[(name, title)]
    if want["ok"]:
        assert got["ok"], f"Kiln failed where jinja2 rendered: {got.get('error')}"
        assert got["output"] == want["output"]
        return
    assert not got["ok"], f"jinja2 failed ({want['message']}) but Kiln rendered:\n{got['output']}"
    if want["raised"]:
        assert got["raised"], f"expected raise_exception({want['message']!r}), got {got['error']}"
        assert got["message"] == want["message"]
