"""bench/citation_candidates.py proposes every number a reader could follow to a line (no mirrors needed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "bench" / "citation_candidates.py"
sys.path.insert(0, str(SCRIPT.parents[1] / "tests" / "grade"))
spec = importlib.util.spec_from_file_location("citation_candidates", SCRIPT)
cc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cc)


def test_a_number_before_a_full_stop_and_a_bare_l_line_are_proposed():
    text = "Relation is in `relation.rb:5`, modules mixed in at line 69. See L12; version 7.1 is not one."
    found = [(c["kind"], c["text"]) for c in cc.candidates(text)]
    assert ("path", "relation.rb:5") in found
    assert ("number", "69") in found
    assert ("number", "12") in found
    assert ("number", "7") not in found and ("number", "1") not in found
    sixty_nine = next(c for c in cc.candidates(text) if c["text"] == "69")
    assert sixty_nine["file"] == "relation.rb"
