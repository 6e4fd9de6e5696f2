"""The citation grader's words and identifier patterns, in one place (issue 34 item 7): every
other module of grade.citations takes its word lists, JSON key lists and name patterns from
here, so a word is added once and read the same way by extraction, subjects and verification.
"""

from __future__ import annotations

# Identifier patterns. IDENT is a name as a path's symbol locator writes it (`path:Class.method`);
# NAME also takes Ruby's `?`/`!` suffix (`Story#is_gone?`), as an answer's prose names methods.
IDENT = r"[A-Za-z_]\w*"
SYMBOL = rf"{IDENT}(?:(?:\.|::|#){IDENT})*"
NAME = r"[A-Za-z_]\w*[?!]?"
QUALIFIED = rf"{NAME}(?:(?:\.|::|#){NAME})*"
DASH = "[-\u2013\u2014]"  # hyphen, en dash, em dash: a range's separator

# Words that name no definition: a signature's or a code span's keywords (`def`, `class`...), Ruby's
# declarations (`include`, `attr_reader`...) and the articles and conjunctions of prose.
KEYWORDS = frozenset(
    """
    fn func def class struct impl pub async await const let var static public private protected
    internal void return for if while where self Self this mut type interface trait enum module
    export function final abstract override unsafe extern crate super in of dyn ref mod use
    package import from lambda end do then else true false None null nil True False
    include extend prepend require require_relative attr_reader attr_writer attr_accessor
    and or not is the a an
""".split()
)
# A constructor's name (`Foo.new`): no identifier to look for at a line (every caller writes it),
# but a subject keeps it (`Spree::Order.new` is about Spree::Order).
CONSTRUCTORS = frozenset(("new",))
# Capitalised words that start prose rather than name a definition (`path:74: Check if ...`).
PROSE_WORDS = frozenset(
    """
    The This That These Those It Its See Also And Or But Then Here There Called Used Uses Returns
    Base Entry Note Each All Every Only No Not Default For In On At With From Via If When Where
    Which What Why How Both Line Lines File Files Defined Calls Call Shared Same Similar One Two
    Other Another New Old Main Core Key Top Bottom Most Many Some Any Overrides Override Inherits
""".split()
)
# Words that may stand between a citation and the name it is about: `path:60 defines Transport`.
LEAD_WORDS = frozenset(
    "defines define declares declared is are has holds contains class def module method "
    "function fn func type struct trait interface the a an with named called "
    "has_many has_one belongs_to has_and_belongs_to_many scope".split()
)
# Words naming a kind of definition: `Story model at path` is about Story.
KIND_WORDS = frozenset(
    "scope method class module constant table association callback helper function "
    "model concern job controller block".split()
)
# Rails declarations written out of backticks (`has_many :orders`, `delegate :order_id`)
DECLARATION_WORDS = frozenset(
    "has_many has_one belongs_to has_and_belongs_to_many delegate scope validates "
    "validate attr_reader attr_writer attr_accessor before_action after_action "
    "before_save after_save before_create after_create before_destroy after_destroy "
    "after_commit before_validation after_initialize".split()
)
# A description opening with one is an instruction (`Add to PROVIDER_PREFERENCE`): what to change.
EDIT_VERBS = frozenset(
    "add create update change remove replace register implement extend modify insert append delete rename move".split()
)
# Verbs of place: `built at path`, `lives in path` name no definition.
PLACE_VERBS = frozenset(
    "is are was were lives live sits sit happens happen starts start begins begin found "
    "runs run occurs occur exists exist appears appear built made set done kept held sent "
    "thrown caught written read".split()
)
PREPOSITIONS = frozenset(("at", "in", "on"))  # `notify at path:96`: a label joined by one

# JSON member keys. A name of the code: IDENT_KEYS (grader 10: `"holder": "dsess.DoltSession"` names the object;
# `"interface": "RaftApplier"` beside a struct's line names what it satisfies, not what is there); where something is: FILE_KEYS, LINE_KEYS,
# END_LINE_KEYS and any key made of LOCATOR_PARTS; prose about it: PROSE_KEYS; its group:
# GROUP_KEYS; a quote of the cited line's code: CODE_KEYS.
IDENT_KEYS = frozenset(
    "name symbol function method class struct trait identifier definition module signature holder component".split()
)
FILE_KEYS = ("file", "path", "file_path", "filepath", "filename")
LINE_KEYS = ("line", "lines", "line_number", "start_line", "line_start")
END_LINE_KEYS = ("end_line", "line_end")
CODE_KEYS = frozenset(("line", "code", "snippet", "excerpt", "quote", "source_line"))
LOCATOR_PARTS = frozenset(
    "file files path paths filepath filename location locations loc line lines ref refs "
    "reference references source where citation citations cite evidence verification "
    "site sites span anchor".split()
)
PROSE_KEYS = frozenset(
    "reason risk why note notes description usage purpose impact dependency depends_how "
    "details summary explanation comment rationale effect consequence".split()
)
# A key naming the kind of place its value is (`"field": "path:57"`, grader 11): the owner's locator.
KIND_KEY_PARTS = frozenset("field definition def declaration decl impl implementation constructor struct".split())
GROUP_KEYS = frozenset("subsystem category group area section tier severity priority level status".split())
