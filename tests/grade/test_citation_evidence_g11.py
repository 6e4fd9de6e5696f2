"""Grader 11's rules of positive evidence for a strict `mismatch` (rule 4), on plain strings."""

from __future__ import annotations

from mcptrials.grade.citations import json_scopes, scopes, strict, structure
from mcptrials.grade.citations.evidence import attached_elsewhere, clause_names, rivals, settle_lists
from mcptrials.grade.citations.verify import written_as_code

PY = """def fulfil(line):
    stock = line.variant.stocks.first()
    return stock


def other():
    pass
"""


def no_path(s: str) -> bool:
    return "/" in s or s.endswith(".py")


def site(text: str, cite: str) -> scopes.Site:
    start = text.index(cite)
    return scopes.Site(text, start, start + len(cite), structure.json_objects(text), is_path=no_path)


def test_the_clause_code_like_names_are_read_both_sides_of_the_citation():
    text = "card fulfillment reads line.variant.stocks and variant.product: a/utils.py:2, next `x_y` b.py:9"
    lo = text.index("a/utils.py:2")
    hi = lo + len("a/utils.py:2")
    names = clause_names(text, lo, hi, 0, text.index("b.py:9"), no_path)
    assert names == ["line.variant.stocks", "variant.product"]  # the clause ends at the comma
    text = "- `a/order_contents.rb:9` – skips `Handler::Cart` when `order.completed?`.\n"
    lo = text.index("a/order")
    names = clause_names(text, lo, lo + len("a/order_contents.rb:9"), 0, len(text), no_path)
    assert names == ["Handler::Cart", "order.completed?"]  # (the citation's own backticks are its)


def test_a_clause_name_at_the_line_s_code_leaves_a_mismatch_undetermined():
    lines = PY.splitlines()
    # the subject `other` is defined at line 6, not 2, but `line.variant.stocks`, named in the clause, is at 2
    why = strict.abstain_reason("a.py", PY, [2], "other", lines, [], ["line.variant.stocks"])
    assert why == "`line.variant.stocks`, named in its clause, is at the cited line"
    # a clause name only enclosing the line (`fulfil` calls ... at :2) is no such evidence
    assert strict.abstain_reason("a.py", PY, [2], "other", lines, [], ["fulfil"]) is None


def test_a_name_attached_to_a_nearby_citation_is_not_a_rival():
    attached = attached_elsewhere([((10, 20), {"name": "RateLimitError", "from": "label"}), ((40, 50), None)])
    assert attached == {"RateLimitError": {(10, 20)}}
    assert rivals(["RateLimitError", "ServerError"], attached, (40, 50)) == ["ServerError"]
    assert rivals(["RateLimitError"], attached, (10, 20)) == ["RateLimitError"]  # its own citation's
    assert rivals(["RateLimitError"], attached, (900, 910)) == ["RateLimitError"]  # attached far away
    # a name from a wide scope (a sentence, a list item) attaches to no single citation
    assert attached_elsewhere([((1, 2), {"name": "x_y", "from": "sentence"})]) == {}


def test_a_name_at_one_line_of_its_list_leaves_the_others_undetermined():
    def occ(strict_, name):
        return {"strict": strict_, "subject": {"name": name, "from": "after"}, "undetermined": None}

    a, b, c = occ("verified", "Revision"), occ("mismatch", "Revision"), occ("mismatch", "Other")
    elsewhere = occ("mismatch", "Revision")
    settle_lists([((0, 9), a), ((0, 9), b), ((0, 9), c), ((50, 59), elsewhere)])
    assert b["strict"] == "undetermined" and b["undetermined"] == "`Revision` is at another line of its list"
    assert c["strict"] == "mismatch"  # another name: not covered by the list's
    assert elsewhere["strict"] == "mismatch"  # another list


def test_a_word_between_two_code_spans_is_not_written_as_code():
    text = "if remote add to `remotes` at `Rakefile:7`; add to console task at `Rakefile:49-53`"
    span = [text.index("Rakefile:49"), len(text) - 1]
    assert not written_as_code(text, span, {"name": "task", "from": "label"})
    assert written_as_code(text, span, {"name": "remotes", "from": "label"})  # in a code span of its lines
    assert written_as_code("the **task** at `Rakefile:4`", [16, 26], {"name": "task", "from": "label"})  # bold


RB = """class Issue
  def move(project)
    children.each do |child|
      next unless child.project_id == 1
      child.save
    end
  end
end
"""


def test_a_line_in_a_block_its_subject_opens_is_no_confirmed_mismatch():
    lines = RB.splitlines()
    assert strict.opens_block(lines, 4, "each", "a.rb")  # line 3 opens the block of line 4
    assert not strict.opens_block(lines, 4, "save", "a.rb")
    assert strict.abstain_reason("a.rb", RB, [4], "children.each", lines, []) == (
        "the cited line lies in a block opened by `each`"
    )
    # a definition's first line is no such opener: `def move(project)` over line 3
    assert not strict.opens_block(lines, 3, "project", "a.rb", {2})


def test_a_name_member_holding_a_sentence_is_a_description_not_the_objects_name():
    text = '{"file": "lib/a/openai_message.rb:6", "method": "to_hash returns format for API call"}'
    assert json_scopes.json_field(site(text, "lib/a/openai_message.rb:6")) is None
    text = '{"file": "lib/a/openai_message.rb:6", "method": "to_hash"}'
    assert json_scopes.json_field(site(text, "lib/a/openai_message.rb:6")) == "to_hash"
    text = '{"file": "lib/a/openai_message.rb:6", "signature": "def to_hash(a, b) -> Hash of roles"}'
    assert json_scopes.json_field(site(text, "lib/a/openai_message.rb:6")) == "to_hash"  # a call: code


def test_a_condition_opens_no_such_block():
    lines = ["def f(self):", "    if self.transport().is_noop(flip):", "        return"]
    assert not strict.opens_block(lines, 3, "transport", "a.py")
