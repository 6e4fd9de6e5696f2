"""Issue 24 item 5: a live Codex run (the real CLI against the Responses fake) and a recorded
Codex run of the reference bench's verticals (converted by the recorded provider) give records
of the same shape: the same transcript, step, tool-call and usage fields, both valid, so every
grader, table and report reads them alike. (The bench stores Codex runs in Claude Code's stream
shape, not Codex's own events: the live run is parsed by hosts.codex, the recording by
recorded/recorded_streams; what must agree is what they produce.)"""

from __future__ import annotations

import pytest

from test_codex import KEY, NS, installed, matrix, responses_api, reply, tool_call  # noqa: F401 (fixtures)
from test_opencode import chat_api  # noqa: F401 (a fixture)
from matrix_helpers import faulty_tool
from mcptrials.core.identity import TrialKey
from mcptrials.matrix.config import load_matrix
from mcptrials.matrix.schema import validate_against
from mcptrials.run.recorded import run_recorded
from mcptrials.run.runner import run_trial
from vertical_fixture import run_import

pytestmark = pytest.mark.slow


def shape(t: dict) -> dict:
    # `one_answer` marks a one-answer scenario (the verticals' are), not the host: left out
    return {
        "transcript": set(t) - {"one_answer"},
        "step": set().union(*(set(s) for s in t["steps"])),
        "tool_call": set().union(*(set(c) for c in t["tool_calls"])),
        "usage": set(t["usage"]),
    }


def test_a_live_and_a_recorded_codex_run_have_one_record_shape(tmp_path, installed, responses_api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    api = responses_api(
        [
            lambda b: reply("Let me look.", tool_call("echo", {"text": "hi"}, id="call_e1", namespace=NS)),
            reply(
                "`helper` is defined at `src/util.py:1`.",
                usage={"input_tokens": 1200, "output_tokens": 40, "cached_tokens": 1000},
            ),
        ]
    )
    m, co = matrix(tmp_path / "live", api, {"faulty": faulty_tool("ok")})
    live, _ = run_trial(m, "gpt", "faulty", "find-helper", 1, co, None, None, tmp_path / "live" / "out", host="codex")
    _, out, commit = run_import(tmp_path / "rec")
    rm = load_matrix(out / "config.yaml")
    recorded, _ = run_recorded(
        rm,
        TrialKey("gpt-z", "codex", "sense", rm.scenarios["tiny"].repo, "tiny", 1),
        {"url": "x", "commit": commit},
        None,
    )
    for t in (live, recorded):
        validate_against("transcript.schema.yaml", t, "transcript")
        assert t["host"] == "codex" and t["outcome"] == "completed"
    a, b = shape(live), shape(recorded)
    for part in a:
        assert a[part] == b[part], (
            f"{part}: only live {sorted(a[part] - b[part])}, only recorded {sorted(b[part] - a[part])}"
        )


@pytest.fixture(scope="module")
def opencode_installed(tmp_path_factory):
    """Opencode for host `opencode`, installed as the workflow does (reused when there)."""
    from host_helpers import install_host
    from test_opencode import MODEL

    return install_host(
        tmp_path_factory.mktemp("install"), "opencode", "opencode", {"provider": "openai", "model": MODEL}
    )


def test_a_live_and_a_recorded_opencode_run_have_one_record_shape(tmp_path, opencode_installed, chat_api, monkeypatch):
    import test_opencode as oc

    monkeypatch.setenv("OPENAI_API_KEY", oc.KEY)
    api = chat_api(
        [
            lambda b: oc.reply("Let me look.", oc.tool_call("faulty_echo", {"text": "hi"}, id="call_e1")),
            oc.reply(
                "`helper` is defined at `src/util.py:1`.",
                usage={"prompt_tokens": 1200, "completion_tokens": 40, "cached_tokens": 1000},
            ),
        ]
    )
    m, co = oc.matrix(tmp_path / "live", api, {"faulty": faulty_tool("ok")})
    live, _ = run_trial(m, "q", "faulty", "find-helper", 1, co, None, None, tmp_path / "live" / "out", host="opencode")
    _, out, commit = run_import(tmp_path / "rec")
    rm = load_matrix(out / "config.yaml")
    recorded, _ = run_recorded(
        rm,
        TrialKey("gpt-z", "codex", "sense", rm.scenarios["tiny"].repo, "tiny", 1),
        {"url": "x", "commit": commit},
        None,
    )
    for t in (live, recorded):
        validate_against("transcript.schema.yaml", t, "transcript")
        assert t["outcome"] == "completed" and t["tool_calls"], t.get("outcome_detail")
    a, b = shape(live), shape(recorded)
    for part in a:
        assert a[part] == b[part], (
            f"{part}: only live {sorted(a[part] - b[part])}, only recorded {sorted(b[part] - a[part])}"
        )
