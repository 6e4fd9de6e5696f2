"""What the description-variant tests share (tests/prepare/test_proxy.py, and under the real
Claude Code CLI tests/run/test_proxy_claude_code.py): the overrides, the tools of a config with
a variant, its project and snapshot, and an anthropic model on the test Messages API."""

from matrix_helpers import faulty_tool, write_matrix
from mcptrials.core.records import write_json
from mcptrials.matrix.config import load_matrix
from mcptrials.prepare.checkout import checkout
from mcptrials.prepare.snapshot import make_snapshot

KEY = "fake-key-test-proxy-0123456789abcdef"
OVERRIDES = {
    "tools": {
        "echo": {
            "name": "say",
            "description": "Say the text back, word for word.",
            "parameters": {"text": "The words to say."},
        },
        "big": {"description": "Make a long text."},
    }
}


def variant_tools(**variant) -> dict:
    return {
        "baseline": {"transport": "none"},
        "faulty": faulty_tool("ok", version="1.0"),
        "terse": dict({"variant_of": "faulty", "overrides": OVERRIDES}, **variant),
    }


def variant_project(tmp_path, tools, extra=None):
    m = load_matrix(write_matrix(tmp_path, tools=tools, extra=extra))
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    write_json(tmp_path / "checkout.json", co)
    return m, co


def proxy_mounted(sandbox: dict) -> bool:
    """The sandbox record mounts mcptrials/prepare/proxy.py alone, read-only (a project path is recorded relative)."""
    return [m["mode"] for m in sandbox["mounts"] if m["path"].endswith("mcptrials/prepare/proxy.py")] == [
        "ro"
    ] and not any(m["path"].endswith("src/mcptrials") for m in sandbox["mounts"])


def variant_snapshot(m, tmp_path, tool):
    return make_snapshot(
        str(m.path),
        tool,
        "tiny",
        tmp_path / "checkout.json",
        None,
        None,
        tmp_path / "snap" / tool / "tools.json",
        count_tokens=False,
    )


def anthropic_extra(api, hosts=None) -> dict:
    return {
        "models": {
            "claude": {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": api.url, "max_retries": 0}
        },
        "hosts": hosts or {"loop": {"kind": "loop"}},
        "pricing": {"claude-sonnet-4-6": {"input": 3.0, "output": 15.0}},
    }
