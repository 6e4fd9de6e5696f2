"""Shared pytest fixtures."""

import sys
from pathlib import Path

import pytest

# Tests import the fakes as `fakes.*` and the helpers (workflow_helpers, ...) by name,
# whatever pytest's import mode and whichever stage folder the test is in.
sys.path.insert(0, str(Path(__file__).parent))

from fakes.messages_api import FakeMessagesAPI  # noqa: E402
from host_helpers import started_apis  # noqa: E402


@pytest.fixture
def fake_api(tmp_path):
    """Factory: ``fake_api(script, **kwargs)`` starts a FakeMessagesAPI on 127.0.0.1 (port 0),
    logging to a JSONL file under tmp_path; every server started is stopped at teardown."""
    yield from started_apis(FakeMessagesAPI, tmp_path, "requests")
