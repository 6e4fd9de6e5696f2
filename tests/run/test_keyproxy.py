"""The key proxy (mcptrials.run.keyproxy) against the real fakes over HTTP: the key it adds per
API, the stand-in it drops, the fields it sets, its count of calls and its turn limit."""

import hashlib
import json
import socket
import urllib.error
import urllib.request

from fakes.openai_api import FakeOpenAIAPI, reply
from fakes.responses_api import FakeResponsesAPI
from mcptrials.run.keyproxy import KeyProxy

KEY = "real-key-0123456789"


def post(url: str, body: dict, token: str) -> tuple[int, dict]:
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"content-type": "application/json", "authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw) if raw.startswith(b"{") else {"raw": raw.decode()}


def sha(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()


def test_bearer_key_replaces_the_stand_in_and_fields_are_set():
    with (
        FakeOpenAIAPI([reply("hi")]) as api,
        KeyProxy(api.url, KEY, auth="bearer", set_fields={"max_completion_tokens": 7}) as proxy,
    ):
        status, body = post(
            proxy.url + "/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "x"}]}, proxy.token
        )
    assert status == 200 and body["choices"][0]["message"]["content"] == "hi"
    (r,) = api.completion_requests()
    assert r["auth_sha256"] == sha(KEY) and r["body"]["max_completion_tokens"] == 7
    assert "x-api-key" not in r["headers"] and proxy.statuses == [200]


def test_messages_api_key_goes_as_x_api_key():
    with FakeResponsesAPI([]) as api, KeyProxy(api.url, KEY) as proxy:
        post(proxy.url + "/responses", {"model": "m", "input": "x"}, proxy.token)
    (r,) = api.response_requests()
    assert r["auth_sha256"] == sha(KEY) and "authorization" not in r["headers"]


def test_the_turn_limit_refuses_the_next_call_without_forwarding_it():
    with FakeResponsesAPI([]) as api, KeyProxy(api.url, KEY, auth="bearer") as proxy:
        first = proxy.begin_step(2)
        codes = [post(proxy.url + "/responses", {"model": "m", "input": "x"}, proxy.token)[0] for _ in range(3)]
        assert codes == [200, 200, 429] and proxy.limit_hit.is_set()
        assert len(api.response_requests()) == 2 and proxy.statuses[first:] == [200, 200]
        proxy.begin_step(2)  # a new step counts afresh
        assert not proxy.limit_hit.is_set()
        assert post(proxy.url + "/responses", {"model": "m", "input": "x"}, proxy.token)[0] == 200


def test_errors_and_an_unreachable_api_are_counted():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    with KeyProxy(dead, KEY, auth="bearer") as proxy:
        status, _ = post(proxy.url + "/responses", {"model": "m", "input": "x"}, proxy.token)
    assert status == 502 and proxy.statuses == [502]


def test_failed_calls_in_a_row_give_up_and_a_success_resets_the_count():
    from fakes.responses_api import error, reply as r

    with (
        FakeResponsesAPI([error(500), r("ok"), error(500), error(503)]) as api,
        KeyProxy(api.url, KEY, auth="bearer") as proxy,
    ):
        proxy.begin_step(None, 2)
        codes = []
        for _ in range(4):
            codes.append(post(proxy.url + "/responses", {"model": "m", "input": "x"}, proxy.token)[0])
            if len(codes) == 2:
                assert not proxy.gave_up.is_set()  # 500, then a success: not two in a row
        assert codes == [500, 200, 500, 503] and proxy.gave_up.is_set() and proxy.stopped()


def test_the_trial_limit_holds_across_steps_whoever_calls():
    """steps x max_turns successful calls in the whole trial; a new step does not reset it
    (a server in the CLI's sandbox cannot spend past what the budget reserved)."""
    with FakeResponsesAPI([]) as api, KeyProxy(api.url, KEY, auth="bearer", trial_calls=3) as proxy:
        proxy.begin_step(2)
        codes = [post(proxy.url + "/responses", {"model": "m", "input": "x"}, proxy.token)[0] for _ in range(2)]
        proxy.begin_step(2)
        for _ in range(3):
            status, body = post(proxy.url + "/responses", {"model": "m", "input": "x"}, proxy.token)
            codes.append(status)
        assert codes == [200, 200, 200, 429, 429]
        assert body["error"]["type"] == "mcptrials_trial_limit"
        assert proxy.trial_limit_hit.is_set() and proxy.refused == 2
        assert proxy.stopped()  # the host stops the CLI: it would retry
        assert len(api.response_requests()) == 3  # the refused ones never reached the API


def test_a_larger_output_cap_is_lowered_to_the_reply_cap():
    with FakeOpenAIAPI([reply("a"), reply("b")]) as api, KeyProxy(api.url, KEY, auth="bearer", reply_cap=500) as proxy:
        post(proxy.url + "/chat/completions", {"model": "m", "messages": [], "max_tokens": 64000}, proxy.token)
        post(proxy.url + "/chat/completions", {"model": "m", "messages": [], "max_completion_tokens": 100}, proxy.token)
    first, second = api.completion_requests()
    assert first["body"]["max_tokens"] == 500  # lowered
    assert second["body"]["max_completion_tokens"] == 100  # within the cap: as sent


def test_a_call_past_the_steps_limit_is_the_steps_even_at_the_trials_limit():
    with FakeResponsesAPI([]) as api, KeyProxy(api.url, KEY, auth="bearer", trial_calls=2) as proxy:
        proxy.begin_step(2)
        codes = [post(proxy.url + "/responses", {"model": "m", "input": "x"}, proxy.token)[0] for _ in range(3)]
    assert codes == [200, 200, 429] and proxy.limit_hit.is_set() and not proxy.trial_limit_hit.is_set()
    assert len(api.response_requests()) == 2
