"""A CLI host's trial with no route to the model API (issue 32): the key proxy cannot reach
the upstream and answers the CLI 502, and the CLI reports that as it sees it ("502 ... check
your inference gateway (127.0.0.1:...)": the harness's own proxy). The trial records what
happened instead: "the model API (<upstream url>) could not be reached: <reason>" with the fix,
and stays api_failed (missing data, never a zero).

No CLI is needed: each host's step outcome is given the stream its CLI writes in that case,
through a real proxy whose upstream is a port nothing listens on."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from types import SimpleNamespace

import pytest

from mcptrials.run.hosts import claude_code, codex, opencode
from mcptrials.run.hosts.cli import ProcessRun
from mcptrials.run.keyproxy import KeyProxy
from mcptrials.run.trial import Recorder

KEY = "real-key-0123456789"


def post(url: str, body: dict, token: str) -> tuple[int, str]:
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"content-type": "application/json", "authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def dead_url() -> str:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def ctx(base_url: str | None) -> SimpleNamespace:
    return SimpleNamespace(
        rec=Recorder(),
        tool=SimpleNamespace(name="git", has_server=True),
        model=SimpleNamespace(name="claude", base_url=base_url, max_retries=0),
    )


def test_the_proxy_says_which_api_it_could_not_reach_and_why():
    dead = dead_url()
    with KeyProxy(dead, KEY, auth="bearer") as proxy:
        proxy.begin_step(None)
        status, body = post(proxy.url + "/responses", {"model": "m", "input": "x"}, proxy.token)
        assert status == 502 and proxy.statuses == [502]
        assert f"the model API ({dead}) could not be reached" in body
        assert proxy.upstream == dead and proxy.unreachable_in_step().startswith("ConnectionRefusedError")
        proxy.begin_step(None)  # a new step: nothing unreachable yet
        assert proxy.unreachable_in_step() is None


# What each CLI writes when every model call it made was answered 502 by the proxy.
def claude_code_stream(proxy_url: str) -> list[dict]:
    return [
        {"type": "system", "subtype": "init", "mcp_servers": []},
        {
            "type": "result",
            "subtype": "success",
            "is_error": True,
            "api_error_status": 502,
            "result": f"API Error: 502 Bad Gateway. This may be a temporary issue; check your inference gateway "
            f"({proxy_url.removeprefix('http://')})",
        },
    ]


CODEX_STREAM = [
    {"type": "thread.started", "thread_id": "T"},
    {"type": "turn.started"},
    {"type": "turn.failed", "error": {"message": "unexpected status 502 Bad Gateway"}},
]
OPENCODE_STREAM = [
    {"type": "error", "error": {"name": "APIError", "data": {"message": "Bad Gateway", "statusCode": 502}}}
]


def outcome_of(host: str, c, proxy) -> tuple[str, str | None]:
    run = ProcessRun(events=[], stderr="", returncode=1, timed_out=False, stopped=False)
    if host == "claude-code":
        session = claude_code._Session(ctx=c, binary="claude", host_home=None, session_id="s", proxy=proxy)
        return session._outcome(run, claude_code.parse_stream(claude_code_stream(proxy.url), 0), 0)
    if host == "codex":
        session = codex._Session(ctx=c, binary="codex", host_home=None, proxy=proxy)
        return session._outcome(run, codex.parse_stream(CODEX_STREAM, 0), 0, proxy.statuses)
    session = opencode._Session(ctx=c, binary="opencode", host_home=None, proxy=proxy)
    return session._outcome(run, opencode.parse_stream(OPENCODE_STREAM, 0, {}, "git"), 0, proxy.statuses)


@pytest.mark.parametrize("host", ["claude-code", "codex", "opencode"])
@pytest.mark.parametrize("given_url", [True, False])
def test_a_trial_without_a_route_to_the_model_api_says_so(host, given_url):
    dead = dead_url()
    c = ctx(dead if given_url else None)
    with KeyProxy(dead, KEY, auth="x-api-key" if host == "claude-code" else "bearer") as proxy:
        proxy.begin_step(None)
        assert post(proxy.url + "/messages", {"model": "m"}, proxy.token)[0] == 502
        outcome, detail = outcome_of(host, c, proxy)
    assert outcome == "api_failed"  # missing data, never a zero
    assert detail.startswith(f"the model API ({dead}) could not be reached: ConnectionRefusedError")
    assert "inference gateway" not in detail and proxy.url not in detail
    fix = "fix models.claude.base_url" if given_url else "set models.claude.base_url"
    assert fix in detail and "network" in detail
    (event,) = c.rec.error_events  # the error recorded says the same
    assert event["kind"] == "api_error" and event["message"] == detail


@pytest.mark.parametrize("host", ["claude-code", "codex", "opencode"])
def test_an_api_that_answered_an_error_is_reported_as_the_cli_says(host):
    """A 502 the API itself sent (it was reached) is no unreachable API."""
    from fakes.openai_api import FakeOpenAIAPI, error

    with FakeOpenAIAPI([error(502)]) as api, KeyProxy(api.url, KEY, auth="bearer") as proxy:
        proxy.begin_step(None)
        assert post(proxy.url + "/chat/completions", {"model": "m", "messages": []}, proxy.token)[0] == 502
        outcome, detail = outcome_of(host, ctx(api.url), proxy)
    assert outcome == "api_failed" and "could not be reached" not in detail
