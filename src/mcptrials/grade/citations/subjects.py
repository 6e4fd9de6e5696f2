"""The subject of a citation: the identifier the answer says is at the cited place, read
as a careful reader reads it, from the narrowest scope first (issue 25 item 3):

0. "label": the name the citation is attached to, right before it with nothing but
   spaces, backticks, quotes, an opening `(` and one `:`, dash or `at`/`in`/`on` between
   (`` `is_noop(self)` — path:74 ``, `Http.post (path:28)`, `Sms :36`, `notify at path:96`,
   `"Shell": "path:13"`): a code-like name, a capitalised word that does not start prose,
   or a plain word that begins its clause or is joined by `at`/`in`/`on` and is not a verb
   (`built at path` is not one, nor is a lower-case participle: `wired server.go:417`), when
   no code-like name is in its clause (`logic (path)`
   in "the 404-is-permanent logic (path)" is not one: the clause began earlier); a JSON key
   (`"file": "path"`) is never one; else, for a citation inside a parenthetical with nothing
   code-like before it there, the code-like name right before the `(`
   (`` `domain` (belongs_to, line 5) ``); across a closed parenthetical right before the
   citation (`` `incoming_links` (inbound, `to_story`) :48 ``: incoming_links); a heading
   clause ending in `:` gives its first code-like name (`SuggestedTitle belongs_to story: path`);
   a kind word (model, class, method, scope, block...) right before gives the name before it
   (`Story model at path`, `validate block (path)`);
1. "after": the clause right after the citation (a parenthetical `(Channel.notify)`, or
   `path:16 Apprise`, `path:60 defines Transport`): its first code-like name within two words
   of the citation, lead words such as `defines` not counted (in a parenthetical, anywhere:
   `path:16 fills cache from story through DiffBot` is about the line, not DiffBot), or its first
   word when that is a capitalised identifier directly after the citation; Rails
   declaration words (`has_many merged_stories`) lead to the name after them;
2. "before": the nearest code-like name before it in the same clause
   (`` `Transport.notify` signature (path:64) ``);
3. "json field": the `name`/`symbol`/`function`/`signature`... member of its own innermost
   JSON object (for a JSON `"line"` member this comes first: the member is the clause);
   "json text": else the first code-like name of another member's text, or its capitalised
   name before a kind word (`"dependent": "Tagging model"`), when the cited file names it
   (a name of another member that the file lacks is about something else) (`"what":
   "Utils.normalize used by Story#url="`, `"use": "has_many :stories"`; a prose member such
   as `reason` or `depends_how` gives a code-like name only, a locator or group member
   none: json_key_kind below), and never for the value of a descriptive member of its own (`"base_class": "path:60", "entry_point":
   "notify(...)"`: the siblings are other facts, not this citation's);
   "json key": before these, the key of the JSON member the citation is the value of
   (`"user": "story.rb:4"`), when the cited file names it somewhere (key_named): a key that
   names nothing of the file (`"model_validation": "story.rb:265"`) is a label, no subject;
   a locator, prose or group key never is one (json_key_kind: `file`, `file_line`, `refs`,
   `verification`...; `reason`, `risk`, `depends_how`...; `subsystem`, `category`...). A
   locator or group member gives no "json text"; a prose member only a code-like name; and
   an item of an array (`"refs": ["a:1", "b:2"]`) takes none: the object's text is about the group;
   "json code": a member quoting the cited line's code beside it (`"file": "issue.rb:111",
   "line": "scope :like"`; CODE_KEYS, not a line number) gives the quote's first code-like
   name, else its name as a code span's;
4. "table name cell": the identifier in its table row's symbol/name column; in a table with
   no such column, the code span opening the cell right after a cell that is the citation
   alone (`` | `path:410` | `PromotionRule.gifts` | gift rewards | ``);
5. "list item": the first code-like name of its list item (of a nested item that names
   nothing, its parent item's bullet line: `8. **Slackalike.payload**` over `   - File: path`);
6. "sentence": the nearest code-like name of its sentence that the cited file names (the
   widest scope: a name the file lacks is about something else).

Before all of these, "respectively" (verify.respectively): one of a group of
citations joined by `/` or `,` right after as many names joined by `/` takes the name in
its place (`` `hidden_by`/`not_hidden_by` `:148`/`:151` ``: :151 is about not_hidden_by),
with the group's names kept: a line where the name in its place is not but another name of
the group is takes that one ("respectively, in another order", settle_strict).

After all of these, once the file is resolved, a subject that is the cited file's own
lower-case name or its plural (`moderation: moderation.rb:15`, `has_one :story_text` ->
story_text.rb:3), or a lower-case folder of its path (`checkout: saleor/checkout/search/
indexing.py:190`), is dropped (names_its_file): the word names the file, not a place in it, and
the next scope decides (grader 11: `warehouse: path:705 get_order_lines_with_track_inventory`).
So is a subject from the wider scopes (json text, list item, sentence) of a citation in a
run of three or more joined by commas (`a.go:1, b.go:2, c.go:3`; grading._runs): the text
is about the group.

A name right after `instead of` or `rather than` is the one not meant (`uses `a` instead of
`b` (:88)`: a). A description opening with an edit verb (`Add to PROVIDER_PREFERENCE`, a JSON
`"change": "add elsif branch for ..."`; EDIT_VERBS) is an instruction: the names in it are what
to change, not what is at the line, so neither "after" nor "json text" takes one from it.

A clause ends at `, ; | ·`, a line break, a sentence's full stop, an unopened `)` or another
citation; commas inside backticks, or before the citation inside a closed `(...)`
(`calls self.transport.notify(flip, n) at path`), do not end it. Code-like: backticked, or bold, or with a
qualifier (`a.b`, `A::b`, `A#b`), an underscore, an inner capital (`HttpTransport`), all
capitals of five letters or more (`TRANSPORTS`; `HTTP`, `PORO` are prose) or a call's `(`;
a part of a hyphenated prose word (`IP-delete`), a segment of a path or URL after a plain
lower-case word and a slash (`chat/completions`), a key of the answer's own JSON and a
capitalised plain word the cited file never names (`Revisions:`, `**Permissions**`; _Reader)
are no names; a Rails declaration out of
backticks names its symbol (`delegate :order_id, to: :shipment` -> order_id), and a bold heading holding a code span (`` **`Device.save` cascade** ``) names
that span's identifier. In JSON, "sentence" is the string the citation stands in. Inside a code span the subject is the span's
qualified identifier (`Story#is_gone?`), else its first Ruby symbol (`has_many :taggings`
-> taggings), else the name before its first `(` (`def notify(self)` -> notify), else its
first identifier that is not a keyword (`include Token` -> Token); `e.g`, `i.e` and one-letter
names are never names; a qualified name followed by
its type, as a field is declared, is that name (`DoltDatabaseProvider.databases
map[string]dsess.SqlDatabase` -> DoltDatabaseProvider.databases). Paths, one-letter names
and keywords are never subjects.

Each subject is {"name": qualified name, "from": the scope above}. The scopes are SCOPES below,
in order: small functions of the citation's Site (scopes.py: the prose; json_scopes.py: JSON),
each over the names names.py reads in the text; the first that gives a name decides.
"""

from __future__ import annotations

from mcptrials.grade.citations.json_scopes import json_code, json_field, json_key, json_owner, json_text
from mcptrials.grade.citations.scopes import Site, after, before, label, list_item, sentence, table_name_cell

SCOPES = (
    ("label", label),
    ("after", after),
    ("before", before),
    ("json key", json_key),
    ("json field", json_field),
    ("json code", json_code),
    ("json owner", json_owner),
    ("json text", json_text),
    ("table name cell", table_name_cell),
    ("list item", list_item),
    ("sentence", sentence),
)


def subject(
    text: str,
    start: int,
    end: int,
    *,
    objects,
    before: int,
    after: int,
    is_path,
    json_member: bool = False,
    key_named=None,
    plain_named=None,
    skip=frozenset(),
) -> dict | None:
    """The subject of the citation text[start:end]: the first of SCOPES that names one (Site says
    what the arguments are), a name of `skip` (one that names the cited file) not counted."""
    site = Site(text, start, end, objects, before, after, is_path, json_member, key_named, plain_named)
    for scope, read in SCOPES:
        name = read(site)
        if name and name not in skip:
            return {"name": name, "from": scope}
    return None
