"""The reference agent driven in a loop with the real built-in tools over a small repo.

"MCP" tools here are small functions named mcp__x__...: the real servers are tested
elsewhere. Their schemas below are trimmed copies of what the real servers list
(code-index-mcp's search_code_advanced, server-filesystem's search_files/read_text_file).
"""

import asyncio
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mcptrials.prepare.builtins import BUILTIN_TOOLS, BuiltinTools, glob_to_regex
from mcptrials.providers.reference import ReferenceProvider
from mcptrials.providers.reference.arguments import Need, build_arguments, page_key
from mcptrials.providers.reference.provider import MAX_ROUNDS
from mcptrials.providers.reference.question import Term, extract_scopes, extract_terms, stem
from mcptrials.providers.reference.results import WorkspacePaths, looks_failed, next_page, parse_hits, parse_read
from mcptrials.providers.reference.step import _window
from mcptrials.providers.reference.tools import classify_tool

SYSTEM = [{"type": "text", "text": "State your reasoning before each tool call."}]
CITATION = re.compile(r"[\w./-]+\.\w+:\d+")

SEARCH_CODE = {
    "name": "mcp__x__search_code",
    "description": "Search for code pattern with pagination. Supports glob file_pattern.",
    "input_schema": {
        "type": "object",
        "required": ["pattern"],
        "properties": {
            "pattern": {"type": "string"},
            "case_sensitive": {"type": "boolean", "default": True},
            "file_pattern": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "regex": {"anyOf": [{"type": "boolean"}, {"type": "null"}], "default": None},
            "max_results": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 10},
        },
    },
}
SEARCH_FILES = {
    "name": "mcp__fs__search_files",
    "description": "Recursively search for files and directories matching a pattern. The patterns should be "
    "glob-style patterns that match paths relative to the working directory.",
    "input_schema": {
        "type": "object",
        "required": ["path", "pattern"],
        "properties": {
            "path": {"type": "string"},
            "pattern": {"type": "string"},
            "excludePatterns": {"type": "array", "items": {"type": "string"}, "default": []},
        },
    },
}
READ_TEXT_FILE = {
    "name": "mcp__fs__read_text_file",
    "description": "Read the complete contents of a file from the file system as text. Use the 'head' "
    "parameter to read only the first N lines of a file.",
    "input_schema": {
        "type": "object",
        "required": ["path"],
        "properties": {"path": {"type": "string"}, "tail": {"type": "number"}, "head": {"type": "number"}},
    },
}
WRITE_FILE = {
    "name": "mcp__fs__write_file",
    "description": "Create a new file or overwrite one.",
    "input_schema": {
        "type": "object",
        "required": ["path", "content"],
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    },
}
GIT_LOG = {
    "name": "mcp__git__git_log",
    "description": "Shows the commit logs",
    "input_schema": {
        "type": "object",
        "required": ["repo_path"],
        "properties": {"repo_path": {"type": "string"}, "max_count": {"type": "integer", "default": 10}},
    },
}


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "src" / "shop").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "shop" / "app.py").write_text(
        "from shop.pricing import apply_discount\n"
        "\n"
        "\n"
        "def checkout(cart):\n"
        "    total = sum(cart)\n"
        "    return apply_discount(total, 0.1)\n"
    )
    (root / "src" / "shop" / "pricing.py").write_text(
        '"""Prices."""\n'
        "\n"
        "TAX_RATE = 0.2\n"
        "\n"
        "\n"
        "def apply_discount(amount, rate):\n"
        '    """Take a rate off an amount."""\n'
        "    return amount * (1 - rate)\n"
        "\n"
        "\n"
        "class PriceBook:\n"
        "    def lookup(self, sku):\n"
        "        return apply_discount(self.prices[sku], 0)\n"
    )
    (root / "tests" / "test_pricing.py").write_text(
        "from shop.pricing import apply_discount\n\n\ndef test_it():\n    assert apply_discount(10, 0) == 10\n"
    )
    return root


def fake_search(root: Path, mode: str = "all"):
    """A code search in the style of code-index-mcp: JSON results with absolute paths."""

    def run(args):
        if mode == "error":
            return "Error: the index is not built", True
        results = []
        for f in sorted(root.rglob("*.py")):
            for n, line in enumerate(f.read_text().splitlines(), 1):
                if args["pattern"] in line:
                    results.append({"file": str(f), "line": n, "text": line})
        if mode == "first_only":
            results = results[:1]
        return json.dumps({"results": results, "pagination": {"total_matches": len(results)}}), False

    return run


def drive(provider, tools, executors, prompts, bt, max_replies=12):
    """The agent loop, as the runner will run it: every tool_use of a reply is executed in
    order and answered in one user turn. Returns (messages, replies)."""
    messages, replies = [], []
    for prompt in prompts:
        messages.append({"role": "user", "content": prompt})
        for _ in range(max_replies):
            reply = asyncio.run(provider.complete(SYSTEM, messages, tools, 4096))
            replies.append(reply)
            messages.append({"role": "assistant", "content": reply.content})
            if reply.stop_reason != "tool_use":
                break
            results = []
            for b in reply.content:
                if b["type"] != "tool_use":
                    continue
                if b["name"] in executors:
                    text, err = executors[b["name"]](b["input"])
                else:
                    text, err = bt.call(b["name"], b["input"])
                results.append({"type": "tool_result", "tool_use_id": b["id"], "content": text, "is_error": err})
            messages.append({"role": "user", "content": results})
        else:
            pytest.fail("the agent did not finish the step")
    return messages, replies


def answer_of(replies):
    return "".join(b["text"] for b in replies[-1].content if b["type"] == "text")


def tool_calls(messages):
    return [b for m in messages if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"]


def test_finds_the_definition_and_cites_it(repo):
    prov = ReferenceProvider(str(repo))
    messages, replies = drive(
        prov,
        [SEARCH_CODE] + BUILTIN_TOOLS,
        {"mcp__x__search_code": fake_search(repo)},
        ["Where is `apply_discount` defined?"],
        BuiltinTools(repo),
    )
    answer = answer_of(replies)
    assert replies[-1].stop_reason == "end_turn"
    assert "`apply_discount` is defined at `src/shop/pricing.py:6`: `def apply_discount(amount, rate):`" in answer
    assert "Take a rate off an amount." in answer  # from the read of the hit's window
    assert str(repo) not in answer  # absolute paths from the tool made relative
    calls = tool_calls(messages)
    assert calls[0]["name"] == "mcp__x__search_code"  # the server's search comes before grep
    assert calls[0]["input"] == {"pattern": "apply_discount"}
    assert any(c["name"] == "read_file" for c in calls)
    # every tool_use is preceded by a text block stating why
    for m in messages:
        if m["role"] == "assistant":
            for i, b in enumerate(m["content"]):
                if b["type"] == "tool_use":
                    assert i > 0 and m["content"][i - 1]["type"] == "text"
                    assert b["name"] in m["content"][i - 1]["text"]


def test_every_citation_is_grounded(repo):
    prov = ReferenceProvider(str(repo))
    _, replies = drive(
        prov,
        [SEARCH_CODE] + BUILTIN_TOOLS,
        {"mcp__x__search_code": fake_search(repo)},
        ["Which functions call `apply_discount`?"],
        BuiltinTools(repo),
    )
    answer = answer_of(replies)
    cites = re.findall(r"`([\w./-]+\.py):(\d+)`(?: in `[\w.]+`)?: `([^`]*)`", answer)
    assert len(cites) >= 3
    for path, line, code in cites:
        assert (repo / path).read_text().splitlines()[int(line) - 1].strip() == code
    assert "`src/shop/app.py:6` in `checkout`" in answer
    assert "`src/shop/pricing.py:13` in `PriceBook.lookup`" in answer


def test_several_tool_calls_in_one_reply(repo):
    prov = ReferenceProvider(str(repo))
    messages, replies = drive(
        prov, BUILTIN_TOOLS, {}, ["Compare `apply_discount` and `PriceBook` and `TAX_RATE`."], BuiltinTools(repo)
    )
    first = replies[0].content
    uses = [b for b in first if b["type"] == "tool_use"]
    assert [b["name"] for b in uses] == ["grep", "grep", "grep"]
    assert [b["type"] for b in first] == ["text", "tool_use"] * 3
    assert len({b["id"] for b in tool_calls(messages)}) == len(tool_calls(messages))  # ids unique
    answer = answer_of(replies)
    assert "`src/shop/pricing.py:6`" in answer and "`src/shop/pricing.py:11`" in answer
    assert "`src/shop/pricing.py:3`" in answer


def test_same_inputs_same_transcript(repo):
    tools = [SEARCH_CODE] + BUILTIN_TOOLS
    runs = [
        drive(
            ReferenceProvider(str(repo)),
            tools,
            {"mcp__x__search_code": fake_search(repo)},
            ["Where is `apply_discount` defined?", "And `PriceBook`? This is the last step."],
            BuiltinTools(repo),
        )[0]
        for _ in range(2)
    ]
    assert json.dumps(runs[0]) == json.dumps(runs[1])
    # and the provider answers one conversation the same way twice
    prov = ReferenceProvider(str(repo))
    a = asyncio.run(prov.complete(SYSTEM, runs[0][:3], tools, 4096))
    b = asyncio.run(prov.complete(SYSTEM, runs[0][:3], tools, 4096))
    assert a == b


def test_transcript_does_not_depend_on_hash_seed(repo):
    """Set iteration order changes with PYTHONHASHSEED: the transcript must not."""
    script = (
        "import asyncio, json, sys\n"
        "from pathlib import Path\n"
        "from mcptrials.prepare.builtins import BUILTIN_TOOLS, BuiltinTools, glob_to_regex\n"
        "from mcptrials.providers.reference import ReferenceProvider\n"
        "ws = sys.argv[1]; bt = BuiltinTools(Path(ws)); p = ReferenceProvider(ws)\n"
        "msgs = [{'role': 'user', 'content': 'Where are `apply_discount`, `PriceBook` and \"rate\" used?'}]\n"
        "for _ in range(8):\n"
        "    r = asyncio.run(p.complete([], msgs, BUILTIN_TOOLS, 4096))\n"
        "    msgs.append({'role': 'assistant', 'content': r.content})\n"
        "    if r.stop_reason != 'tool_use': break\n"
        "    msgs.append({'role': 'user', 'content': [{'type': 'tool_result', 'tool_use_id': b['id'],\n"
        "        'content': bt.call(b['name'], b['input'])[0]} for b in r.content if b['type'] == 'tool_use']})\n"
        "print(json.dumps(msgs))\n"
    )
    outs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outs.append(
            subprocess.run(
                [sys.executable, "-c", script, str(repo)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
                timeout=60,
            ).stdout
        )
    assert outs[0] == outs[1] and "pricing.py" in outs[0]


def test_erroring_tool_falls_back_to_grep(repo):
    prov = ReferenceProvider(str(repo))
    messages, replies = drive(
        prov,
        [SEARCH_CODE] + BUILTIN_TOOLS,
        {"mcp__x__search_code": fake_search(repo, "error")},
        ["Where is `apply_discount` defined? Last step: give feedback on the tools."],
        BuiltinTools(repo),
    )
    names = [c["name"] for c in tool_calls(messages)]
    assert names[:2] == ["mcp__x__search_code", "grep"]
    assert "fall back" in replies[1].content[0]["text"]
    answer = answer_of(replies)
    assert "`src/shop/pricing.py:6`" in answer
    feedback = answer.split("Feedback on the tools:")[1]
    assert "`mcp__x__search_code` failed in 1 of 1 call(s)" in feedback
    assert "`grep` helped" in feedback


def test_feedback_only_on_the_last_step(repo):
    prov = ReferenceProvider(str(repo))
    _, replies = drive(prov, BUILTIN_TOOLS, {}, ["Where is `TAX_RATE` defined?"], BuiltinTools(repo))
    assert "Feedback on the tools" not in answer_of(replies)


def test_a_better_server_gives_a_better_answer(repo):
    """Same agent, same question: the server that returns every hit leads to the definition;
    one that returns only its first hit (a use in app.py) leads to a worse answer."""
    answers = {}
    for mode in ("all", "first_only"):
        prov = ReferenceProvider(str(repo))
        _, replies = drive(
            prov,
            [SEARCH_CODE] + BUILTIN_TOOLS,
            {"mcp__x__search_code": fake_search(repo, mode)},
            ["What does `apply_discount` return?"],
            BuiltinTools(repo),
        )
        answers[mode] = answer_of(replies)
    assert "`src/shop/pricing.py:6`" in answers["all"]
    assert "`src/shop/pricing.py:6`" not in answers["first_only"]
    assert "`src/shop/app.py:1`" in answers["first_only"]


def test_file_search_then_read_without_line_numbers(repo):
    """server-filesystem style: search_files gives bare absolute paths, read_text_file plain text
    (no line numbers, `head` only); the agent numbers the lines itself."""

    def search_files(args):
        rx = glob_to_regex(args["pattern"])
        hits = [str(p) for p in sorted(repo.rglob("*")) if rx.match(p.relative_to(repo).as_posix())]
        return ("\n".join(hits) or "No matches found"), False

    def read_text_file(args):
        lines = Path(args["path"]).read_text().splitlines()
        return "\n".join(lines[: int(args["head"])] if "head" in args else lines), False

    prov = ReferenceProvider(str(repo))
    messages, replies = drive(
        prov,
        [SEARCH_FILES, READ_TEXT_FILE, WRITE_FILE] + BUILTIN_TOOLS,
        {"mcp__fs__search_files": search_files, "mcp__fs__read_text_file": read_text_file},
        ["Explain the pricing module."],
        BuiltinTools(repo),
    )
    calls = tool_calls(messages)
    assert calls[0] == {
        **calls[0],
        "name": "mcp__fs__search_files",
        "input": {"path": str(repo), "pattern": "**/*pric*"},
    }  # the stem of "pricing"
    assert any(
        c["name"] == "mcp__fs__read_text_file" and c["input"]["path"] == str(repo / "src/shop/pricing.py")
        for c in calls
    )
    assert all(c["name"] != "mcp__fs__write_file" for c in calls)
    assert all(c["name"] != "grep" for c in calls)  # the server's tools sufficed
    answer = answer_of(replies)
    assert (
        "The file `src/shop/pricing.py` (found by name for `pricing`) defines `TAX_RATE` "
        "(`src/shop/pricing.py:3`), `apply_discount` (`src/shop/pricing.py:6`), `PriceBook` "
        "(`src/shop/pricing.py:11`), `lookup` (`src/shop/pricing.py:12`)." in answer
    )
    for name, path, line in re.findall(r"`(\w+)` \(`([\w./-]+\.py):(\d+)`\)", answer):
        assert name in (repo / path).read_text().splitlines()[int(line) - 1]


def test_terminates_within_the_round_bound(repo):
    """A server that always points at new, unreadable files cannot keep the agent going."""
    counter = {"n": 0}

    def endless(args):
        counter["n"] += 1
        return "\n".join(f"ghost/{counter['n']}_{i}.py:{i + 1}" for i in range(5)), False

    prov = ReferenceProvider(str(repo))
    messages, replies = drive(
        prov,
        [SEARCH_CODE] + BUILTIN_TOOLS,
        {"mcp__x__search_code": endless},
        ["Where is `NoSuchThing` defined?"],
        BuiltinTools(repo),
    )
    tool_rounds = [r for r in replies if r.stop_reason == "tool_use"]
    assert 1 <= len(tool_rounds) <= MAX_ROUNDS
    assert replies[-1].stop_reason == "end_turn"
    assert not CITATION.search(answer_of(replies))


def test_nothing_found_is_said_honestly(repo):
    prov = ReferenceProvider(str(repo))
    messages, replies = drive(
        prov,
        [SEARCH_CODE] + BUILTIN_TOOLS,
        {"mcp__x__search_code": fake_search(repo)},
        ["Where is `frobnicate_widget` defined?"],
        BuiltinTools(repo),
    )
    answer = answer_of(replies)
    assert "could not find `frobnicate_widget`" in answer
    assert not CITATION.search(answer)
    assert [c["name"] for c in tool_calls(messages)] == ["mcp__x__search_code", "grep"]


def test_usage_is_an_estimate_of_characters_over_four(repo):
    prov = ReferenceProvider(str(repo))
    messages = [{"role": "user", "content": "hi"}]
    reply = asyncio.run(prov.complete([], messages, [], 4096))
    # '[[], [{"content": "hi", "role": "user"}], []]' is 46 characters: ceil(46 / 4) = 12
    assert reply.usage.input_tokens == 12
    assert reply.usage.output_tokens == math.ceil(len(json.dumps(reply.content, sort_keys=True)) / 4) > 0
    assert not CITATION.search(reply.content[0]["text"])


def test_max_tokens_cuts_the_reply(repo):
    prov = ReferenceProvider(str(repo))
    reply = asyncio.run(
        prov.complete([], [{"role": "user", "content": "Where is `apply_discount`?"}], BUILTIN_TOOLS, 10)
    )
    assert reply.stop_reason == "max_tokens"
    assert all(b["type"] == "text" for b in reply.content)


# --- the pieces --------------------------------------------------------------


def test_extract_terms():
    terms, files = extract_terms(
        'Where is `load_config()` used, what does "retry budget" mean, how does '
        "HttpClient call mcptrials.config.canonical_hash in config.py (e.g. here)?"
    )
    assert [(t.search, t.kind) for t in terms] == [
        ("load_config", "ident"),
        ("retry budget", "phrase"),
        ("HttpClient", "ident"),
    ]
    assert files == ["config.py"]
    dotted, _ = extract_terms("What does `Usage.add` do?")
    assert dotted == [Term("add", "Usage.add", "ident", qualifier="Usage"), Term("Usage", "Usage", "ident")]
    words, _ = extract_terms("How are the scenario files validated?")
    assert [(t.search, t.label) for t in words] == [("validat", "validated"), ("scenario", "scenario")]
    assert stem("parsing") == "pars" and stem("schema") == "schema"


def test_classify_tools():
    roles = {
        t["name"]: classify_tool(t).role
        for t in (SEARCH_CODE, SEARCH_FILES, READ_TEXT_FILE, WRITE_FILE, GIT_LOG, BUILTIN_TOOLS[0], BUILTIN_TOOLS[1])
    }
    assert roles == {
        "mcp__x__search_code": "search",
        "mcp__fs__search_files": "filesearch",
        "mcp__fs__read_text_file": "read",
        "mcp__fs__write_file": None,
        "mcp__git__git_log": "history",
        "read_file": "read",
        "grep": "search",
    }


def test_build_arguments_from_schemas():
    ws = "/w/repo"
    term = Term("apply_discount", "apply_discount", "ident")
    assert build_arguments(classify_tool(SEARCH_CODE), Need(term=term), ws) == {"pattern": "apply_discount"}
    assert build_arguments(classify_tool(SEARCH_FILES), Need(term=term), ws) == {
        "path": ws,
        "pattern": "**/*apply_discount*",
    }
    assert build_arguments(classify_tool(READ_TEXT_FILE), Need(path="src/a.py", lo=3, hi=12), ws) == {
        "path": "/w/repo/src/a.py",
        "head": 12,
    }
    assert build_arguments(classify_tool(BUILTIN_TOOLS[0]), Need(path="src/a.py", lo=3, hi=12), ws) == {
        "path": "src/a.py",
        "start_line": 3,
        "end_line": 12,
    }
    assert build_arguments(classify_tool(BUILTIN_TOOLS[1]), Need(term=term), ws) == {"pattern": r"\bapply_discount\b"}
    # a required argument it cannot fill: the tool is skipped
    symbol_body = {
        "name": "mcp__x__get_symbol_body",
        "description": "Get the source code body of a symbol.",
        "input_schema": {
            "type": "object",
            "required": ["file_path", "symbol_name"],
            "properties": {"file_path": {"type": "string"}, "symbol_name": {"type": "string"}},
        },
    }
    assert build_arguments(classify_tool(symbol_body), Need(path="src/a.py", lo=1, hi=9), ws) is None


def test_zero_based_line_arguments_round_trip():
    """A read tool whose schema says its lines are 0-based gets 0-based numbers, and what it
    returns is numbered 1-based again."""
    spec = classify_tool(
        {
            "name": "mcp__s__read_file",
            "description": "Reads a file.",
            "input_schema": {
                "type": "object",
                "required": ["relative_path"],
                "properties": {
                    "relative_path": {"type": "string"},
                    "start_line": {"type": "integer", "description": "The 0-based index of the first line."},
                    "end_line": {"type": "integer", "description": "The 0-based index of the last line."},
                },
            },
        }
    )
    args = build_arguments(spec, Need(path="src/a.py", lo=4, hi=9), "/w")
    assert args == {"relative_path": "src/a.py", "start_line": 3, "end_line": 8}
    assert _window(spec, args, WorkspacePaths("/w")) == ("src/a.py", 4, 9)


def test_parse_hits_formats():
    paths = WorkspacePaths("/w/repo")
    assert parse_hits("src/a.py:4: def f():\nsrc/b.py:10:x = f()\n[2 of 9 matches shown]", paths) == [
        ("src/a.py", 4, "def f():"),
        ("src/b.py", 10, "x = f()"),
    ]
    ci = json.dumps(
        {
            "results": [{"file": "src/a.py", "line": 4, "text": "def f():"}],
            "pagination": {"total_matches": 1, "start_index": 0},
        }
    )
    assert parse_hits(ci, paths) == [("src/a.py", 4, "def f():")]
    assert parse_hits("/w/repo/src/a.py\n/w/repo/src\n/etc/passwd\nNo matches found", paths) == [
        ("src/a.py", None, None)
    ]
    serena_like = json.dumps({"src/a.py": ["  >   4: def f():"]})
    assert parse_hits(serena_like, paths) == [("src/a.py", 4, "def f():")]
    nested = json.dumps([{"name": "f", "relative_path": "src/a.py", "body_location": {"start_line": 4}}])
    assert parse_hits(nested, paths) == [("src/a.py", 4, None)]
    assert parse_hits("see ../../etc/passwd:1 and /elsewhere/x.py:3", paths) == []


def test_parse_read_and_failure_detection():
    assert parse_read("a.py: lines 4-5 of 9\n     4\tdef f():\n     5\t    pass", 1, numbered_only=True) == {
        4: "def f():",
        5: "    pass",
    }
    assert parse_read("x = 1\ny = 2\n", 1) == {1: "x = 1", 2: "y = 2"}
    assert parse_read(json.dumps({"code": "def f():\n    pass", "start_line": 7}), 1) == {7: "def f():", 8: "    pass"}
    assert looks_failed(json.dumps({"status": "error", "message": "File not found in index"}))
    assert looks_failed("Error: access denied - path outside allowed directories")
    assert not looks_failed(json.dumps({"results": []}))


# --- exact answers, scopes, paged results, history (general rules, no scenario knowledge) ---


def paged_search(root: Path, page_size: int = 2):
    """code-index-mcp's paging: `max_results` a page, `start_index` to ask for a later one,
    and a pagination block saying whether more are left."""

    def run(args):
        hits = []
        for f in sorted(root.rglob("*.py")):
            for n, line in enumerate(f.read_text().splitlines(), 1):
                if args["pattern"] in line:
                    hits.append({"file": str(f), "line": n, "text": line})
        start = args.get("start_index", 0)
        page = hits[start : start + page_size]
        return json.dumps(
            {
                "results": page,
                "pagination": {
                    "total_matches": len(hits),
                    "returned": len(page),
                    "start_index": start,
                    "end_index": start + len(page),
                    "has_more": start + len(page) < len(hits),
                },
            }
        ), False

    return run


PAGED_SEARCH = {
    **SEARCH_CODE,
    "name": "mcp__x__search_code",
    "input_schema": {
        **SEARCH_CODE["input_schema"],
        "properties": {**SEARCH_CODE["input_schema"]["properties"], "start_index": {"type": "integer", "default": 0}},
    },
}
COUNT_PROMPT = (
    "How many times is `apply_discount` called inside the `src` folder? Count call expressions only, "
    "nothing in the tests folder. Give the total as a bare integer alone on the last line of your answer."
)


def test_counts_call_sites_and_puts_the_count_alone_on_the_last_line(repo):
    _, replies = drive(ReferenceProvider(str(repo)), BUILTIN_TOOLS, {}, [COUNT_PROMPT], BuiltinTools(repo))
    answer = answer_of(replies)
    # calls at app.py:6 and pricing.py:13; the definition, the import and the test's two lines are left out
    assert answer.splitlines()[-1] == "2"
    assert "tests/test_pricing.py" not in answer
    assert "`src/shop/app.py:6` in `checkout`" in answer and "`src/shop/pricing.py:13` in `PriceBook.lookup`" in answer


def test_follows_a_paged_search_to_its_last_page(repo):
    messages, replies = drive(
        ReferenceProvider(str(repo)),
        [PAGED_SEARCH] + BUILTIN_TOOLS,
        {"mcp__x__search_code": paged_search(repo)},
        [COUNT_PROMPT],
        BuiltinTools(repo),
    )
    searches = [c["input"] for c in tool_calls(messages) if c["name"] == "mcp__x__search_code"]
    # 6 matching lines (with the tests'), 2 a page: pages at 0, 2 and 4, then has_more is false
    assert searches == [
        {"pattern": "apply_discount"},
        {"pattern": "apply_discount", "start_index": 2},
        {"pattern": "apply_discount", "start_index": 4},
    ]
    assert answer_of(replies).splitlines()[-1] == "2"
    assert not any(c["name"] == "grep" for c in tool_calls(messages))  # the server's pages sufficed


def test_without_the_pages_the_count_is_short(repo):
    """The same agent on the first page only (a server without a page argument) counts what
    it saw: the paging is what makes the paged server's answer right."""
    no_paging = {**SEARCH_CODE}
    _, replies = drive(
        ReferenceProvider(str(repo)),
        [no_paging] + BUILTIN_TOOLS,
        {"mcp__x__search_code": lambda a: paged_search(repo)({"pattern": a["pattern"]})},
        [COUNT_PROMPT],
        BuiltinTools(repo),
    )
    assert answer_of(replies).splitlines()[-1] == "1"  # app.py:6 only: the page held the import and it


def test_value_of_a_definition_alone_on_the_last_line(repo):
    _, replies = drive(
        ReferenceProvider(str(repo)),
        BUILTIN_TOOLS,
        {},
        ["Where is `TAX_RATE` defined and what is its value? Give the value alone on the last line of your answer."],
        BuiltinTools(repo),
    )
    answer = answer_of(replies)
    assert answer.splitlines()[-1] == "0.2"
    assert "`TAX_RATE` is assigned `0.2` at `src/shop/pricing.py:3`." in answer


def git_log_result(args):
    return (
        "Commit history:\nCommit: 0123456789abcdef0123456789abcdef01234567\nAuthor: Ann\n"
        "Date: 2024-05-01 12:00:00+00:00\nMessage: release 2.0\n\nCommit: "
        + "f" * 40
        + "\nAuthor: Bob\nDate: 2024-04-01 12:00:00+00:00\nMessage: first\n"
    ), False


HISTORY_PROMPT = "Which commit is checked out, who authored it and when? Give its full id alone on the last line."


def test_history_questions_go_to_a_history_tool(repo, tmp_path):
    messages, replies = drive(
        ReferenceProvider(str(repo)),
        [GIT_LOG] + BUILTIN_TOOLS,
        {"mcp__git__git_log": git_log_result},
        [HISTORY_PROMPT],
        BuiltinTools(repo),
    )
    calls = tool_calls(messages)
    assert [c["name"] for c in calls] == ["mcp__git__git_log"]
    assert calls[0]["input"] == {"repo_path": str(repo)}
    answer = answer_of(replies)
    assert "- author: Ann" in answer and "- message: release 2.0" in answer
    assert answer.splitlines()[-1] == "0123456789abcdef0123456789abcdef01234567"  # the newest commit


def test_history_question_without_a_history_tool_is_answered_honestly(repo):
    _, replies = drive(ReferenceProvider(str(repo)), BUILTIN_TOOLS, {}, [HISTORY_PROMPT], BuiltinTools(repo))
    answer = answer_of(replies)
    assert answer.startswith("None of my tools shows the repository's history")
    assert not re.search(r"\b[0-9a-f]{40}\b", answer)


def test_scopes_and_paging_helpers():
    assert extract_scopes("calls inside the `acme_shop` package, not in the `src/x` folder") == ["acme_shop/", "src/x/"]
    assert extract_scopes("within the `a.b` module") == ["a/b/"]
    terms, _ = extract_terms("How many times is `f` called inside the `pkg` package?")
    assert [t.search for t in terms] == ["f"]  # the scope is not searched for
    assert next_page(json.dumps({"results": [], "pagination": {"has_more": True, "end_index": 10}})) == 10
    assert next_page(json.dumps({"pagination": {"has_more": True, "start_index": 4, "returned": 3}})) == 7
    assert next_page(json.dumps({"items": [], "next_cursor": "abc"})) == "abc"
    assert next_page(json.dumps({"pagination": {"has_more": False, "end_index": 13}})) is None
    assert next_page("a.py:1: x") is None
    assert page_key(classify_tool(PAGED_SEARCH)) == "start_index" and page_key(classify_tool(SEARCH_CODE)) is None
