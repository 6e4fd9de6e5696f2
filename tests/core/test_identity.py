"""The trial identity (core.identity.TrialKey): one key and one folder for the six fields."""

from pathlib import Path

import pytest

from mcptrials.core.identity import RUN_DIR, TrialKey


def test_key_folder_and_cell_round_trip(tmp_path):
    k = TrialKey("m", "loop", "baseline", "flask", "s1", 2)
    assert k.key == "m/loop/baseline/flask/s1/2"
    assert k.dir(tmp_path) == tmp_path / "m" / "loop" / "baseline" / "flask" / "s1" / "2"
    assert RUN_DIR.format(**k.cell()) == k.key
    assert TrialKey.from_dir(tmp_path, k.dir(tmp_path)) == k
    assert TrialKey.of({**k.cell(), "trial": "2", "extra": 1}) == k  # a path's "2" is trial 2
    model, host, *_, trial = k  # unpacks as the old tuple
    assert (model, host, trial) == ("m", "loop", 2)


def test_a_folder_that_is_not_a_trial_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not a trial folder"):
        TrialKey.from_dir(tmp_path, Path(tmp_path, "m", "loop"))
