"""Where the recorded judge finds a trial's judgement (mcptrials.judge.recorded.judged_file),
from the trial's identity: `judge.path` filled with its fields, else beside its recording."""

import yaml

from matrix_helpers import faulty_tool, write_matrix
from mcptrials.core.identity import TrialKey
from mcptrials.judge.recorded import judged_file
from mcptrials.matrix.config import load_matrix

PATTERN = "recorded/{tool}/{repo}/{scenario}/{trial}.jsonl"  # the recorded model's runs


def test_judge_path_is_filled_with_the_trials_fields_else_the_judgement_is_beside_its_recording(tmp_path):
    m = load_matrix(
        write_matrix(
            tmp_path,
            tools={"baseline": {"transport": "none"}, "git": faulty_tool("ok")},
            extra={"models": {"rec": {"provider": "recorded", "format": "claude-code-stream-json", "path": PATTERN}}},
        )
    )
    key = TrialKey("rec", "loop", "git", "tiny", "two", 1)
    cfg = yaml.safe_load(m.path.read_text())
    cfg["judge"] = {"provider": "recorded"}
    m.path.write_text(yaml.safe_dump(cfg))
    beside = load_matrix(m.path)
    assert beside.specs.judge.path is None
    assert judged_file(beside, key) == beside.base_dir / "recorded/git/tiny/two/judged.json"
    cfg["judge"]["path"] = "judgements/{model}/{host}/{tool}/{repo}/{scenario}/{trial}.json"
    m.path.write_text(yaml.safe_dump(cfg))
    named = load_matrix(m.path)
    assert named.specs.judge.path == cfg["judge"]["path"]
    assert judged_file(named, key) == named.base_dir / "judgements/rec/loop/git/tiny/two/1.json"
