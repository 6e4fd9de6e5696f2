"""What the CLI hosts share (mcptrials.run.hosts.cli), tested directly: a CLI that is not
installed ends the trial as the harness's failure, saying how to install it."""

from types import SimpleNamespace

import pytest

from mcptrials.run.hosts.cli import installed_binary
from mcptrials.run.trial import TrialAbort


def test_a_missing_cli_aborts_the_trial_naming_the_install_command(tmp_path):
    ctx = SimpleNamespace(host=SimpleNamespace(name="cc"))
    with pytest.raises(TrialAbort) as e:
        installed_binary(ctx, tmp_path / "claude", "Claude Code")
    assert e.value.outcome == "harness_failed"
    assert "Claude Code is not installed" in e.value.detail
    assert "mcptrials install-host --host cc --out results/hosts/cc/install.json" in e.value.detail
    (tmp_path / "claude").write_text("#!/bin/sh\n")
    assert installed_binary(ctx, tmp_path / "claude", "Claude Code") == tmp_path / "claude"
