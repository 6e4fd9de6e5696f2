"""Grader 10's rules of the strict verdict, each on plain strings (no repository)."""

from __future__ import annotations

from mcptrials.grade.citations import strict
from mcptrials.grade.citations.verify import declared

RUBY = """class Package
  def order
    @order
  end

  def currency
    order.currency
  end

  def relation
    relation = Relation.create(self)
    relation
  end
end

class Store
  has_many :orders
end

class Context
  def initialize(llm)
    @llm = llm
  end
end
"""

GO = """package nomad

type Encrypter struct {
	srv *Server
}

// Roots holds the roots.
type Roots struct {
	Head RootValue
}
"""


def verdict(path: str, source: str, line: int, subject: str) -> str:
    return strict.verdict(path, source, [line], subject, source.splitlines())


def test_a_function_signature_stands_for_the_calls_of_its_body():
    assert verdict("a.rb", RUBY, 10, "Relation.create") == "verified"  # `def relation`, body line 11
    assert verdict("a.rb", RUBY, 6, "order.currency") == "verified"  # `order` is a receiver, not a scope


def test_a_class_line_does_not_stand_for_its_body_declarations():
    assert verdict("a.rb", RUBY, 16, "orders") == "mismatch"  # `class Store`, not `has_many :orders`


def test_a_struct_line_stands_for_its_fields_only_for_the_owner_named():
    assert verdict("a.go", GO, 3, "Encrypter.srv") == "verified"
    assert verdict("a.go", GO, 8, "Roots.srv") == "mismatch"  # another struct's line: srv is Encrypter's


def test_the_doc_comment_of_a_struct_does_not_stand_for_its_fields():
    # a doc comment cited for a field: the field has its own line (a reader's `wrong line`)
    assert not strict.stands_for_body(strict._defs("a.go", GO) or [], 7, 7, "Roots.Head", "a.go", GO.splitlines())
    assert strict.stands_for_body(strict._defs("a.go", GO) or [], 8, 8, "Roots.Head", "a.go", GO.splitlines())


def test_a_constructor_call_is_its_initialize():
    assert "initialize" in strict.forms("new")
    assert verdict("a.rb", RUBY, 21, "Context.new") == "verified"
    assert verdict("a.rb", RUBY, 16, "Context.new") == "mismatch"


def test_is_function():
    assert strict.is_function("method") and strict.is_function("function_declaration")
    assert not strict.is_function("class") and not strict.is_function("type_spec")
    assert not strict.is_function("method_elem")  # an interface's method: no body


def test_a_rails_declaration_out_of_backticks_is_written_as_code():
    assert declared("store.rb:11 - has_many :orders", "orders")
    assert not declared("store.rb:11 - has many orders", "orders")
    assert not declared("has_many :orders_count", "orders")


GO_METHODS = """package a

type allocRunner struct {
	rpcClient RPCer
}

func (ar *allocRunner) hooks() {
	newCSIHook(ar.rpcClient)
}

func other() {
	x := 1
}
"""


def test_a_line_in_a_method_of_the_subjects_own_type_is_no_evidence_of_a_wrong_line():
    lines = GO_METHODS.splitlines()
    assert verdict("a.go", GO_METHODS, 8, "allocRunner") == "mismatch"  # the plain verdict
    why = strict.abstain_reason("a.go", GO_METHODS, [8], "allocRunner", lines, [])
    assert why == "the cited line lies in `allocRunner`'s code"
    assert strict.abstain_reason("a.go", GO_METHODS, [12], "allocRunner", lines, []) is None


def test_a_rails_declaration_beside_the_citation_names_its_subject_in_any_scope():
    from mcptrials.grade.citations.verify import _window

    text = '{"file": "app/models/time_entry.rb", "line": 20, "usage": "belongs_to :issue; deletion cascades"}'
    assert declared(_window(text, [10, 30]), "issue")
    assert not declared(_window(text, [10, 30]), "project")
