"""The rubric judge: the reference judge on hand-computed cases, blindness, repeats, the
anthropic judge through the real SDK against the fake Messages API and the openai judge
through the real SDK against the fake chat-completions API (tests/fakes), both through the
provider layer; the judge's config section and settings hash."""

import json

import pytest
import yaml

from fakes import openai_api as oa
from fakes.messages_api import FakeMessagesAPI, error, reply, text
from mcptrials.cli import main
from mcptrials.matrix.hashing import canonical_hash, file_sha256
from mcptrials.matrix.scenario import load_scenario
from mcptrials.judge.blinding import identity_names, mask_identities
from mcptrials.judge.judging import PROMPT_FILE, judge_settings_hash, judge_trial, weighted_quality
from mcptrials.judge.model_judge import JudgeError
from mcptrials.judge.prompt import MalformedReply, parse_reply
from mcptrials.judge.reference import content_words, gold_cited, key_point_present

KEY_ENV = "MCPTRIALS_TEST_JUDGE_KEY"
SECRET = "sk-test-judge-secret-0123456789"

SCENARIO = {
    "repo": "demo",
    "rubric": {
        "criteria": [  # the default, used by step `explain`
            {"name": "completeness", "weight": 1, "question": "Does it cover the key points?"},
            {"name": "specificity", "weight": 1, "question": "Is it specific?", "citations": True},
        ]
    },
    "steps": [
        {
            "name": "find",
            "prompt": "Where is the configuration parsed?",
            "key_points": [
                "parse_config reads config.yaml",
                "Loader caches the result",
                "defaults live in defaults.py",
            ],
            "citations": {"gold": ["src/pkg/core.py:4", "src/pkg/defaults.py:10-12"]},
            "rubric": {
                "criteria": [
                    {"name": "accuracy", "weight": 3, "question": "Is it correct?"},
                    {
                        "name": "grounding",
                        "weight": 1,
                        "question": "Does it cite the code?",
                        "citations": True,
                        "key_points": ["parse_config reads config.yaml"],
                    },
                ]
            },
        },
        {"name": "explain", "prompt": "How does the loader retry?", "key_points": ["retries three times"]},
    ],
}

# Step `find`: key points 1 present, 2 and 3 absent (no "live"); core.py:6 is within 5 lines of
# gold core.py:4; defaults.py:20 is 8 lines past gold 10-12, so not cited.
FIND_ANSWER = (
    "The function parse_config in src/pkg/core.py:6 reads the file config.yaml, via the "
    "mcp__git__git_show tool of the git server. Defaults: see src/pkg/defaults.py:20."
)
# accuracy  = 1/3 (all three step key points)
# grounding = (1 key point + 1 gold citation) / (1 + 2) = 2/3
# find quality = (3 * 1/3 + 1 * 2/3) / 4 = 5/12
FIND_QUALITY = 5 / 12


def transcript(answers: dict, outcome="completed", tool_calls=None):
    return {
        "schema": "mcptrials/transcript/1",
        "cell": {"model": "m", "host": "loop", "tool": "git", "repo": "demo", "scenario": "sc", "trial": 1},
        "provider": "reference",
        "outcome": outcome,
        "steps": [
            {
                "index": i,
                "name": n,
                "prompt": "p",
                "answer_text": a,
                "audit_text": "",
                "outcome": "completed",
                "turns": 1,
            }
            for i, (n, a) in enumerate(answers.items())
        ],
        "tool_calls": tool_calls
        if tool_calls is not None
        else [{"id": "t1", "step": 0, "turn": 1, "name": "mcp__git__git_show", "tool": "git_show", "source": "mcp"}],
        "errors": {},
        "error_events": [],
        "usage": {},
        "wall_seconds": 1.0,
        "messages": [],
    }


def assert_valid(rec):
    """The record matches src/mcptrials/schemas/judged.schema.yaml."""
    import jsonschema

    from mcptrials.core.paths import SCHEMA_DIR

    jsonschema.validate(rec, yaml.safe_load((SCHEMA_DIR / "judged.schema.yaml").read_text()))


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "sc.yaml"
    path.write_text(yaml.safe_dump(SCENARIO))
    return load_scenario(path)


# --- the reference judge -------------------------------------------------------


def test_key_point_rule():
    assert key_point_present("Parse_Config  reads\nCONFIG.yaml", "parse_config reads config.yaml")
    assert key_point_present("the loader is in the module", "module: loader")  # stopwords ignored
    assert not key_point_present("three commits", "three commit")  # whole words only
    assert not key_point_present("retries 3 times", "retries 4 times")  # a number is a content word
    assert content_words("It is in v1.2 of the API") == {"v1", "2", "api"}
    assert key_point_present("-", "a - b") and not key_point_present("-", "ab")  # no content words: substring


def test_gold_citation_window():
    answer = "See src/pkg/core.py:6 and app.py:create_app."
    assert gold_cited("src/pkg/core.py:1", answer)  # |6 - 1| = 5: inside the window
    assert not gold_cited("src/pkg/core.py:12", answer)  # 6 lines away
    assert gold_cited("pkg/core.py:8-20", answer)  # suffix path, 6 is 2 lines before the range
    assert not gold_cited("other/core2.py:6", answer)
    assert gold_cited("app.py:create_app", answer)
    assert gold_cited("core.py:parse_config", "core.py:3 defines parse_config")  # path cited, symbol named
    assert not gold_cited("core.py:Loader", answer)


def test_weighted_quality_formula():
    criteria = [{"name": "a", "weight": 0.4}, {"name": "b", "weight": 0.6}]
    assert weighted_quality({"a": 1.0, "b": 0.5}, criteria) == pytest.approx(0.4 + 0.3)


def test_reference_judge_hand_computed(scenario):
    rec = judge_trial(
        transcript({"find": FIND_ANSWER, "explain": "It retries three times, then gives up."}),
        scenario,
        {"provider": "reference"},
        tool_names=["git", "baseline"],
    )
    find, explain = rec["steps"]
    scores = {c["name"]: c["scores"] for c in find["criteria"]}
    assert scores["accuracy"] == [pytest.approx(1 / 3)]
    assert scores["grounding"] == [pytest.approx(2 / 3)]
    assert find["quality"] == [pytest.approx(FIND_QUALITY)]
    assert "missing: Loader caches the result; defaults live in defaults.py" in find["criteria"][0]["rationales"][0]
    assert "gold citations 1/2 (missing: src/pkg/defaults.py:10-12)" in find["criteria"][1]["rationales"][0]
    # explain: top-level rubric; completeness 1/1, specificity 1/1 (no gold: only the key point)
    assert explain["quality"] == [1.0]
    assert rec["quality"] == [pytest.approx((FIND_QUALITY + 1.0) / 2)]
    assert rec["quality_mean"] == pytest.approx((FIND_QUALITY + 1.0) / 2)
    assert rec["judge"]["provider"] == "reference" and rec["judge"]["model"] is None
    assert rec["usage"]["api_calls"] == 0 and rec["usage"]["cost_usd"] == 0.0
    assert_valid(rec)


def test_incomplete_transcript_judged_on_what_it_has(scenario):
    rec = judge_trial(transcript({"find": FIND_ANSWER}, outcome="max_turns"), scenario, {"provider": "reference"})
    find, explain = rec["steps"]
    assert rec["transcript_outcome"] == "max_turns"
    assert find["quality"] == [pytest.approx(FIND_QUALITY)]
    assert explain["answered"] is False and explain["empty"] is True and explain["model_calls"] == 0
    assert all(c["scores"] == [0.0] and "no judge call" in c["rationales"][0] for c in explain["criteria"])
    assert rec["quality_mean"] == pytest.approx(FIND_QUALITY / 2)


def test_record_provenance(scenario):
    t = transcript({"find": FIND_ANSWER, "explain": ""})
    rec = judge_trial(t, scenario, {"provider": "reference", "repeats": 3})
    assert rec["cell"] == t["cell"]
    assert rec["judge"]["prompt_sha256"] == file_sha256(PROMPT_FILE)
    assert rec["scenario"]["rubric_hash"] == canonical_hash(scenario.rubric_part())
    assert rec["judge"]["settings_hash"] == judge_settings_hash({"provider": "reference", "repeats": 3})
    # the model is not a setting of the reference judge; repeats and provider are
    assert judge_settings_hash({"provider": "reference", "model": "x"}) == judge_settings_hash(
        {"provider": "reference"}
    )
    assert judge_settings_hash({"provider": "reference", "repeats": 2}) != judge_settings_hash(
        {"provider": "reference"}
    )
    assert judge_settings_hash({"provider": "anthropic", "model": "a"}) != judge_settings_hash(
        {"provider": "anthropic", "model": "b"}
    )


def test_repeats_kept(scenario):
    rec = judge_trial(
        transcript({"find": FIND_ANSWER, "explain": ""}), scenario, {"provider": "reference", "repeats": 3}
    )
    assert rec["judge"]["repeats"] == 3
    for step in rec["steps"]:
        assert len(step["quality"]) == 3
        for c in step["criteria"]:
            assert len(c["scores"]) == 3 and len(c["rationales"]) == 3
    assert rec["quality"] == [pytest.approx(FIND_QUALITY / 2)] * 3
    assert_valid(rec)


def test_judge_variance_levels():
    from mcptrials.judge.variance import judge_variance
    from mcptrials.stats.agreement import icc

    def step(quality, empty=False):
        return {"empty": empty, "quality": quality, "criteria": [{"name": "a", "scores": quality}]}

    records = [
        {"quality": [0.5, 0.7], "steps": [step([0.5, 0.7])]},
        {"quality": [0.2, 0.2], "steps": [step([0.4, 0.4]), step([0.0, 0.0], empty=True)]},
    ]
    v = judge_variance(records)
    assert v["scenario"]["mean_range"] == pytest.approx((0.2 + 0.0) / 2)
    assert v["scenario"]["max_sd"] == pytest.approx(0.2 / 2**0.5)  # SD of (0.5, 0.7)
    assert v["scenario"]["icc"] == pytest.approx(icc([[0.5, 0.7], [0.2, 0.2]]))
    assert v["step"]["n_items"] == 2  # the empty answer is not a judged item
    assert v["criteria"]["a"]["mean_range"] == pytest.approx(0.1)


# --- blindness ---------------------------------------------------------------------


def test_masking_names():
    t = transcript(
        {},
        tool_calls=[
            {"source": "mcp", "name": "mcp__sense__map_repo", "tool": "map_repo"},
            {"source": "builtin", "name": "read_file", "tool": "read_file"},
        ],
    )
    names = identity_names(["sense", "git", "baseline"], t)
    assert set(names) == {"sense", "git", "baseline", "mcp__sense__map_repo", "map_repo"}
    masked, n = mask_identities(
        "Using mcp__sense__map_repo and mcp__other__x_y (Sense server) and map_repo, unlike the baseline; "
        "read_file, github.com, git_log and the Git history.",
        names,
    )
    assert masked == (
        "Using [tool] and [tool] ([tool] server) and [tool], unlike the [tool]; "
        "read_file, github.com, git_log and the [tool] history."
    )
    assert n == 6


def test_masking_before_judging(scenario):
    # A key point naming the server can never be found: the reference judge sees the masked text.
    sc_data = dict(SCENARIO, steps=[dict(SCENARIO["steps"][1], key_points=["git server"])])
    path = scenario.path.with_name("masked.yaml")
    path.write_text(yaml.safe_dump(sc_data))
    rec = judge_trial(
        transcript({"explain": "The git server answered."}),
        load_scenario(path),
        {"provider": "reference"},
        tool_names=["git"],
    )
    assert rec["steps"][0]["masked_names"] == 1 and rec["masking"]["names_masked"] == 1
    assert rec["steps"][0]["quality"] == [0.0]


# --- the anthropic judge, through the real SDK ---------------------------------------------


def test_parse_reply_rules():
    names = ["a", "b"]
    ok = '{"criteria": [{"name": "b", "score": 0.5, "rationale": "r"}, {"name": "a", "score": 1, "rationale": "s"}]}'
    assert [c["name"] for c in parse_reply(ok, names)] == ["a", "b"]
    assert parse_reply("Here:\n```json\n" + ok + "\n```", names)[1]["score"] == 0.5
    bad = [
        '{"criteria": [{"name": "a", "score": 1, "rationale": "s"}]}',  # b missing
        ok.replace("0.5", "1.5"),  # out of range
        ok.replace("0.5", "true"),  # not a number
        ok.replace('"b"', '"c"'),  # unknown name
        '{"criteria": [{"name": "a", "score": 1}, {"name": "b", "score": 1, "rationale": ""}]}',  # no rationale
        "I think it is good.",
    ]
    for b in bad:
        with pytest.raises(MalformedReply):
            parse_reply(b, names)


def _judge_json(accuracy, grounding):
    return json.dumps(
        {
            "criteria": [
                {"name": "accuracy", "score": accuracy, "rationale": "states the parser"},
                {"name": "grounding", "score": grounding, "rationale": "cites core.py"},
            ]
        }
    )


USAGE = {"input_tokens": 100, "output_tokens": 50, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 0}


def _cfg(api, **kw):
    return {
        "provider": "anthropic",
        "model": "claude-test",
        "base_url": api.url,
        "api_key_env": KEY_ENV,
        "repeats": 1,
        **kw,
    }


def test_anthropic_valid_reply(scenario, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with FakeMessagesAPI([reply(text(_judge_json(0.8, 0.6)), usage=USAGE)]) as api:
        rec = judge_trial(
            transcript({"find": FIND_ANSWER, "explain": "  "}),
            scenario,
            _cfg(api),
            tool_names=["git", "baseline"],
            pricing={"claude-test": {"input": 3, "output": 15}},
        )
    reqs = api.message_requests()
    assert len(reqs) == 1  # the empty `explain` answer needs no call
    body = reqs[0]["body"]
    assert reqs[0]["auth_present"]
    assert "temperature" not in body and body["model"] == "claude-test"  # API 2026-10-21 rejects it
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    # only the fixed part is cached: the per-step message carries no breakpoint
    assert "cache_control" not in json.dumps(body["messages"]) and "response_format" not in body
    user = body["messages"][0]["content"]
    user = user if isinstance(user, str) else "".join(b["text"] for b in user)
    assert "Where is the configuration parsed?" in user and "src/pkg/defaults.py:10-12" in user
    assert "[tool] server" in user and "mcp__" not in user and "git_show" not in user
    assert "Loader caches the result" in user and "(weight 3)" in user
    find = rec["steps"][0]
    assert find["quality"] == [pytest.approx((3 * 0.8 + 0.6) / 4)]
    assert find["criteria"][1]["rationales"] == ["cites core.py"]
    assert rec["steps"][1]["model_calls"] == 0
    assert rec["quality_mean"] == pytest.approx((3 * 0.8 + 0.6) / 4 / 2)
    assert rec["judge"]["provider"] == "anthropic"
    assert rec["judge"]["model"] == "claude-test" and rec["judge"]["temperature"] is None
    assert "judge.repeats" in rec["judge"]["note"]
    u = rec["usage"]
    assert (u["input_tokens"], u["output_tokens"], u["cache_creation_input_tokens"], u["api_calls"]) == (
        100,
        50,
        200,
        1,
    )
    assert u["cost_usd"] == pytest.approx((100 * 3 + 50 * 15 + 200 * 3.75) / 1e6)
    assert SECRET not in json.dumps(rec)
    assert_valid(rec)


def test_anthropic_one_retry_on_malformed(scenario, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    fenced = "```json\n" + _judge_json(1.0, 0.0) + "\n```"
    with FakeMessagesAPI([reply(text("The answer is quite good.")), reply(text(fenced))]) as api:
        rec = judge_trial(transcript({"find": FIND_ANSWER, "explain": ""}), scenario, _cfg(api))
    reqs = api.message_requests()
    assert len(reqs) == 2
    retry = reqs[1]["body"]["messages"]
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert "could not be used" in json.dumps(retry[2]["content"])
    assert rec["steps"][0]["quality"] == [pytest.approx(0.75)]
    assert rec["usage"]["api_calls"] == 2 and rec["usage"]["malformed_replies"] == 1


def test_anthropic_two_malformed_replies_fail(scenario, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    bad = json.dumps({"criteria": [{"name": "accuracy", "score": 2, "rationale": "x"}]})
    with FakeMessagesAPI([reply(text("not json")), reply(text(bad))]) as api:
        with pytest.raises(JudgeError, match="malformed reply twice"):
            judge_trial(transcript({"find": FIND_ANSWER, "explain": ""}), scenario, _cfg(api))
    assert len(api.message_requests()) == 2


def test_anthropic_repeats_kept(scenario, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with FakeMessagesAPI([reply(text(_judge_json(1.0, 1.0))), reply(text(_judge_json(0.6, 0.2)))]) as api:
        rec = judge_trial(transcript({"find": FIND_ANSWER, "explain": ""}), scenario, _cfg(api, repeats=2))
    assert len(api.message_requests()) == 2
    find = rec["steps"][0]
    assert sorted(find["quality"]) == [pytest.approx(0.5), pytest.approx(1.0)]  # (3*.6+.2)/4 and 1
    assert sorted(find["criteria"][0]["scores"]) == [0.6, 1.0]
    assert rec["quality_mean"] == pytest.approx((0.5 + 1.0) / 2 / 2)


def test_anthropic_api_error_is_a_judge_error(scenario, monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    with FakeMessagesAPI([error(400, message="messages: bad")]) as api:
        with pytest.raises(JudgeError, match="HTTP 400"):
            judge_trial(transcript({"find": FIND_ANSWER, "explain": ""}), scenario, _cfg(api))
    assert len(api.message_requests()) == 1


def test_anthropic_missing_key_is_a_config_error(scenario, monkeypatch):
    from mcptrials.matrix.errors import ConfigError

    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ConfigError, match=KEY_ENV):
        judge_trial(
            transcript({"find": FIND_ANSWER}), scenario, {"provider": "anthropic", "model": "m", "api_key_env": KEY_ENV}
        )


def test_anthropic_retries_are_the_providers(scenario, monkeypatch):
    """A 529 is retried by the provider (the SDK, honouring retry-after) and counted; retries
    spent are a JudgeError naming status and retries, never a silent zero."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    with FakeMessagesAPI([error(529, retry_after=0.01), reply(text(_judge_json(1.0, 1.0)))]) as api:
        rec = judge_trial(transcript({"find": FIND_ANSWER, "explain": ""}), scenario, _cfg(api))
    assert len(api.message_requests()) == 2
    assert rec["usage"]["retries"] == 1 and rec["usage"]["api_calls"] == 1
    with FakeMessagesAPI([error(500, retry_after=0.01)], exhausted="repeat") as api:
        with pytest.raises(JudgeError, match=r"HTTP 500 after 4 retries"):
            judge_trial(transcript({"find": FIND_ANSWER, "explain": ""}), scenario, _cfg(api))
    assert len(api.message_requests()) == 5  # the first try and judge.MAX_RETRIES retries


# --- the openai judge, through the real SDK ------------------------------------------------

OPENAI_KEY_ENV = "MCPTRIALS_TEST_OPENAI_JUDGE_KEY"
OPENAI_SECRET = "sk-test-openai-judge-secret-9876543210"


def _ocfg(api, **kw):
    return {"provider": "openai", "model": "gpt-judge", "base_url": api.url, "api_key_env": OPENAI_KEY_ENV, **kw}


def test_openai_valid_reply(scenario, monkeypatch):
    monkeypatch.setenv(OPENAI_KEY_ENV, OPENAI_SECRET)
    usage = {"prompt_tokens": 700, "completion_tokens": 60, "cached_tokens": 500}
    with oa.FakeOpenAIAPI([oa.reply(_judge_json(0.8, 0.6), usage=usage)]) as api:
        rec = judge_trial(
            transcript({"find": FIND_ANSWER, "explain": ""}),
            scenario,
            _ocfg(api),
            tool_names=["git", "baseline"],
            pricing={"gpt-judge": {"input": 2, "output": 8}},
        )
    reqs = api.completion_requests()
    assert len(reqs) == 1 and reqs[0]["auth_present"]
    body = reqs[0]["body"]
    assert body["model"] == "gpt-judge" and body["max_completion_tokens"] == 2048
    assert not {"temperature", "top_p", "max_tokens", "tools"} & set(body)
    # JSON asked for twice: by the prompt, and as a strict json_schema the API enforces
    rf = body["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["name"] == "judge_scores" and rf["json_schema"]["strict"]
    assert rf["json_schema"]["schema"]["properties"]["criteria"]["items"]["required"] == ["name", "score", "rationale"]
    system, user = body["messages"]
    assert system["role"] == "system" and "Reply with ONLY a JSON object" in system["content"]
    assert user["role"] == "user" and "[tool] server" in user["content"] and "mcp__" not in user["content"]
    assert "src/pkg/defaults.py:10-12" in user["content"]
    find = rec["steps"][0]
    assert find["quality"] == [pytest.approx((3 * 0.8 + 0.6) / 4)] and find["model_calls"] == 1
    j = rec["judge"]
    assert (j["provider"], j["model"], j["base_url"], j["temperature"]) == ("openai", "gpt-judge", api.url, None)
    assert "judge.repeats" in j["note"] and j["prompt_sha256"] == file_sha256(PROMPT_FILE)
    assert j["settings_hash"] == judge_settings_hash(_ocfg(api))
    u = rec["usage"]  # one Usage: uncached input = prompt - cached
    assert (
        u["input_tokens"],
        u["cache_read_input_tokens"],
        u["cache_creation_input_tokens"],
        u["output_tokens"],
        u["api_calls"],
        u["retries"],
    ) == (200, 500, 0, 60, 1, 0)
    assert u["cost_usd"] == pytest.approx((200 * 2 + 500 * 0.2 + 60 * 8) / 1e6)
    assert OPENAI_SECRET not in json.dumps(rec)
    assert_valid(rec)


def test_openai_cut_reply_gets_one_retry(scenario, monkeypatch):
    """Structured outputs still end short at the output cap: the cut JSON gets one retry that
    says so, as a conversation the API accepts (system, user, assistant, user)."""
    monkeypatch.setenv(OPENAI_KEY_ENV, OPENAI_SECRET)
    with oa.FakeOpenAIAPI(
        [oa.reply('{"criteria": [{"name": "accura', finish_reason="length"), oa.reply(_judge_json(1.0, 0.0))]
    ) as api:
        rec = judge_trial(transcript({"find": FIND_ANSWER, "explain": ""}), scenario, _ocfg(api))
    retry = api.completion_requests()[1]["body"]["messages"]
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert retry[2]["content"].startswith('{"criteria"') and "cut at 2048 output tokens" in retry[3]["content"]
    assert rec["steps"][0]["quality"] == [pytest.approx(0.75)]
    assert rec["usage"]["api_calls"] == 2 and rec["usage"]["malformed_replies"] == 1


def test_openai_two_malformed_replies_fail(scenario, monkeypatch):
    monkeypatch.setenv(OPENAI_KEY_ENV, OPENAI_SECRET)
    bad = json.dumps({"criteria": [{"name": "accuracy", "score": 0.5, "rationale": "x"}]})  # grounding missing
    with oa.FakeOpenAIAPI([oa.reply("not json"), oa.reply(bad)]) as api:
        with pytest.raises(JudgeError, match=r"gpt-judge gave a malformed reply twice.*missing \['grounding'\]"):
            judge_trial(transcript({"find": FIND_ANSWER, "explain": ""}), scenario, _ocfg(api))
    assert len(api.completion_requests()) == 2


def test_openai_retries_then_a_clear_failure(scenario, monkeypatch):
    monkeypatch.setenv(OPENAI_KEY_ENV, OPENAI_SECRET)
    with oa.FakeOpenAIAPI([oa.error(429, retry_after=0.01), oa.reply(_judge_json(1.0, 1.0))]) as api:
        rec = judge_trial(transcript({"find": FIND_ANSWER, "explain": ""}), scenario, _ocfg(api, repeats=1))
    assert rec["usage"]["retries"] == 1 and len(api.completion_requests()) == 2
    with oa.FakeOpenAIAPI([oa.error(503, retry_after=0.01)], exhausted="repeat") as api:
        with pytest.raises(JudgeError, match=r"openai model gpt-judge\) failed with HTTP 503 after 4 retries"):
            judge_trial(transcript({"find": FIND_ANSWER, "explain": ""}), scenario, _ocfg(api))
    assert len(api.completion_requests()) == 5
    with oa.FakeOpenAIAPI([oa.malformed()]) as api:
        with pytest.raises(JudgeError, match="malformed response"):
            judge_trial(transcript({"find": FIND_ANSWER, "explain": ""}), scenario, _ocfg(api))


def test_openai_repeats_kept(scenario, monkeypatch):
    monkeypatch.setenv(OPENAI_KEY_ENV, OPENAI_SECRET)
    with oa.FakeOpenAIAPI([oa.reply(_judge_json(1.0, 1.0)), oa.reply(_judge_json(0.6, 0.2))]) as api:
        rec = judge_trial(transcript({"find": FIND_ANSWER, "explain": ""}), scenario, _ocfg(api, repeats=2))
    assert len(api.completion_requests()) == 2
    assert sorted(rec["steps"][0]["quality"]) == [pytest.approx(0.5), pytest.approx(1.0)]
    assert rec["judge"]["repeats"] == 2


def test_openai_missing_key_or_model_is_a_config_error(scenario, monkeypatch):
    from mcptrials.matrix.errors import ConfigError

    monkeypatch.delenv(OPENAI_KEY_ENV, raising=False)
    with pytest.raises(ConfigError, match=f"provider openai needs \\${OPENAI_KEY_ENV}"):
        judge_trial(
            transcript({"find": FIND_ANSWER}),
            scenario,
            {"provider": "openai", "model": "m", "api_key_env": OPENAI_KEY_ENV},
        )
    monkeypatch.setenv(OPENAI_KEY_ENV, OPENAI_SECRET)
    with pytest.raises(ConfigError, match="judge.model: provider openai needs a model id"):
        judge_trial(transcript({"find": FIND_ANSWER}), scenario, {"provider": "openai", "api_key_env": OPENAI_KEY_ENV})
    with pytest.raises(ConfigError, match=r"field judge.provider: 'gemini' is not allowed"):
        judge_trial(transcript({"find": FIND_ANSWER}), scenario, {"provider": "gemini"})


# --- settings: the hash and the config section ---------------------------------------------


def test_settings_hash_covers_what_changes_a_judge_call(tmp_path):
    base = {"provider": "openai", "model": "gpt-a", "base_url": "http://127.0.0.1:1/v1", "repeats": 1}
    h = judge_settings_hash(base)
    for change in (
        {"model": "gpt-b"},
        {"base_url": "http://127.0.0.1:2/v1"},
        {"repeats": 2},
        {"provider": "anthropic"},
    ):
        assert judge_settings_hash(dict(base, **change)) != h, change
    for same in ({"threshold": 0.5}, {"strict": True}, {"api_key_env": "OTHER_KEY"}):  # verdict or secret only
        assert judge_settings_hash(dict(base, **same)) == h, same
    prompt = tmp_path / "judge.md"
    prompt.write_text(PROMPT_FILE.read_text() + "\nBe brief.\n")
    assert judge_settings_hash(base, prompt) != h
    # a partial section gets the schema's defaults: the same hash as the defaults spelled out
    assert judge_settings_hash({"provider": "reference"}) == judge_settings_hash(
        {"provider": "reference", "repeats": 1, "threshold": 0.85, "strict": False}
    )


def test_judge_section_defaults_and_keys(tmp_path):
    from matrix_helpers import write_matrix
    from mcptrials.matrix.config import check_api_keys, load_matrix
    from mcptrials.judge.judging import judge_spec
    from mcptrials.matrix.specs import JudgeSpec

    cfg = write_matrix(tmp_path, extra={"judge": {"provider": "openai", "model": "gpt-judge"}})
    m = load_matrix(cfg)
    spec = judge_spec(m.config["judge"])
    assert isinstance(spec, JudgeSpec) and judge_spec(spec) is spec
    assert (spec.provider, spec.api_key_env, spec.repeats, spec.threshold, spec.strict) == (
        "openai",
        "OPENAI_API_KEY",
        1,
        0.85,
        False,
    )
    assert check_api_keys(m, environ={}) == [
        f"{m.path}: field judge: provider openai needs $OPENAI_API_KEY; export it or use provider: reference"
    ]
    assert check_api_keys(m, environ={"OPENAI_API_KEY": "x"}) == []
    assert judge_spec({"provider": "anthropic"}).api_key_env == "ANTHROPIC_API_KEY"
    assert judge_spec({"provider": "openai", "api_key_env": "LOCAL_KEY"}).api_key_env == "LOCAL_KEY"
    assert (
        check_api_keys(
            load_matrix(cfg, overrides=dict(yaml.safe_load(cfg.read_text()), judge={"provider": "reference"})),
            environ={},
        )
        == []
    )


# --- the command ------------------------------------------------------------------------


def test_judge_command(tmp_path, scenario):
    (tmp_path / "scenarios").mkdir()
    sc_path = tmp_path / "scenarios" / "sc.yaml"
    sc_path.write_text(scenario.path.read_text())
    config = {
        "tools": {"baseline": {"transport": "none"}, "git": {"command": "git-mcp"}},
        "repos": {"demo": {"url": "./repo", "commit": "0" * 40}},
        "scenarios": "scenarios/*.yaml",
        "models": {"ref": {"provider": "reference"}},
        "judge": {"provider": "reference", "repeats": 2},
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    t_path = tmp_path / "transcript.json"
    t_path.write_text(json.dumps(transcript({"find": FIND_ANSWER, "explain": "It retries three times."})))
    out = tmp_path / "out" / "judged.json"
    rc = main(
        [
            "judge",
            "--transcript",
            str(t_path),
            "--scenario",
            str(sc_path),
            "--config",
            str(tmp_path / "config.yaml"),
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    rec = json.loads(out.read_text())
    assert rec["judge"]["repeats"] == 2 and rec["quality"] == [pytest.approx((FIND_QUALITY + 1) / 2)] * 2
    assert_valid(rec)
    assert rec["masking"]["names_masked"] == 2  # mcp__git__git_show and "git" (the configured server)
    assert [p.name for p in out.parent.iterdir()] == ["judged.json"]  # no temp file left behind


def test_judge_command_openai_against_a_separate_server(tmp_path, scenario, monkeypatch):
    """`mcptrials judge` with `judge: {provider: openai, base_url, api_key_env}`, the fake
    chat-completions API in its own process (as next to a Snakemake run)."""
    (tmp_path / "scenarios").mkdir()
    sc_path = tmp_path / "scenarios" / "sc.yaml"
    sc_path.write_text(scenario.path.read_text())
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                oa.reply(_judge_json(0.8, 0.6), usage={"prompt_tokens": 500, "completion_tokens": 40}),
                oa.reply(_judge_json(1.0, 1.0)),
            ]
        )
    )  # two repeats of step `find`
    proc, url = oa.spawn(script, tmp_path / "requests.jsonl", tmp_path / "port.txt")
    try:
        config = {
            "tools": {"baseline": {"transport": "none"}, "git": {"command": "git-mcp"}},
            "repos": {"demo": {"url": "./repo", "commit": "0" * 40}},
            "scenarios": "scenarios/*.yaml",
            "models": {"ref": {"provider": "reference"}},
            "judge": {
                "provider": "openai",
                "model": "gpt-judge",
                "base_url": url,
                "api_key_env": OPENAI_KEY_ENV,
                "repeats": 2,
            },
            "pricing": {"gpt-judge": {"input": 2.0, "output": 8.0}},
        }
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
        t_path = tmp_path / "transcript.json"
        t_path.write_text(json.dumps(transcript({"find": FIND_ANSWER, "explain": ""})))
        out = tmp_path / "out" / "judged.json"
        monkeypatch.setenv(OPENAI_KEY_ENV, OPENAI_SECRET)
        rc = main(
            [
                "judge",
                "--transcript",
                str(t_path),
                "--scenario",
                str(sc_path),
                "--config",
                str(tmp_path / "config.yaml"),
                "--out",
                str(out),
            ]
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert rc == 0
    rec = json.loads(out.read_text())
    assert_valid(rec)
    assert rec["judge"]["provider"] == "openai" and rec["judge"]["base_url"] == url and rec["judge"]["repeats"] == 2
    assert sorted(rec["steps"][0]["quality"]) == [pytest.approx((3 * 0.8 + 0.6) / 4), 1.0]
    assert rec["usage"]["api_calls"] == 2 and rec["usage"]["cost_usd"] is not None
    logged = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert [r["status"] for r in logged] == [200, 200]
    assert all(r["body"]["response_format"]["type"] == "json_schema" for r in logged)
    assert OPENAI_SECRET not in out.read_text() + (tmp_path / "requests.jsonl").read_text()


# --- a paid judgement is not bought twice ---------------------------------------------


def test_a_kept_transcript_is_not_judged_again_by_a_model_judge(tmp_path, monkeypatch):
    """judge_job keeps a model judge's judgement in the trial's folder under results/finished/; a later job
    on the same transcript bytes, judge and rubric (a trial kept by restore_finished, judged.json
    deleted by Snakemake before the job) links it back without a call. Another transcript, or
    another rubric, is judged anew."""
    from matrix_helpers import write_matrix
    from mcptrials.judge.judging import judge_job
    from mcptrials.matrix.config import load_matrix

    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.chdir(tmp_path)
    with FakeMessagesAPI([reply(text(_judge_json(0.8, 0.6)), usage=USAGE)] * 3) as api:
        write_matrix(tmp_path, extra={"judge": _cfg(api), "pricing": {"claude-test": {"input": 3, "output": 15}}})
        m = load_matrix(str(tmp_path / "config.yaml"))
        sc_path = tmp_path / "sc.yaml"
        sc_path.write_text(yaml.safe_dump(SCENARIO))
        trial = tmp_path / "results/runs/reference/loop/baseline/tiny/sc/1"
        trial.mkdir(parents=True)
        (trial / "transcript.json").write_text(json.dumps(transcript({"find": FIND_ANSWER, "explain": ""})))
        out = trial / "judged.json"

        first = judge_job(m, trial / "transcript.json", sc_path, out)
        assert (
            len(api.message_requests()) == 1
            and (tmp_path / "results/finished/reference/loop/baseline/tiny/sc/1/judged.json").is_file()
        )
        out.unlink()  # as Snakemake does before the job
        again = judge_job(m, trial / "transcript.json", sc_path, out)
        assert len(api.message_requests()) == 1  # no second purchase
        assert (
            again == first
            and out.read_bytes()
            == (tmp_path / "results/finished/reference/loop/baseline/tiny/sc/1/judged.json").read_bytes()
        )

        (trial / "transcript.json").write_text(json.dumps(transcript({"find": FIND_ANSWER + " More.", "explain": ""})))
        out.unlink()
        judge_job(m, trial / "transcript.json", sc_path, out)
        assert len(api.message_requests()) == 2  # other bytes: judged anew

        changed = yaml.safe_load(yaml.safe_dump(SCENARIO))
        changed["rubric"]["criteria"][0]["question"] += " Exactly?"
        sc_path.write_text(yaml.safe_dump(changed))
        out.unlink()
        judge_job(m, trial / "transcript.json", sc_path, out)
        assert len(api.message_requests()) == 3  # another rubric: judged anew
