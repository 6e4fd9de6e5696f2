"""How an expected value and an answer's span read: cleaned of quotes and markup, as a
number (thousands separators, currency signs, a trailing %), as a date (a strptime format or
ISO 8601). Shared by the scenario loader (an exact answer's expected value must read as its
mode says) and the graders that compare values (grade.exact, grade.state)."""

from __future__ import annotations

import re
from datetime import date, datetime
from decimal import Decimal, InvalidOperation

_LEAD = "`*_\"'\u201c\u201d\u2018\u2019([{<"
_TRAIL = "`*_\"'\u201c\u201d\u2018\u2019)]}>.,;:!?"
_GROUPED = re.compile(r"^[+-]?\d{1,3}(?:[,_\u2009\u202f\u00a0 ]\d{3})+(?:\.\d+)?$")
_PLAIN = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")


def clean(s: str) -> str:
    s = re.sub(r"\s+", " ", str(s)).strip()
    prev = None
    while s != prev:
        prev = s
        s = s.lstrip(_LEAD).rstrip(_TRAIL).strip()
    return s


def to_number(s: str) -> Decimal | None:
    """The number a string states, or None: 1,234.5 / 1 234.5 / $1234.5 / 12% / 1e3."""
    s = clean(s).lstrip("$\u20ac\u00a3\u00a5").rstrip("%").strip()
    if _GROUPED.match(s):
        s = re.sub(r"[,_\u2009\u202f\u00a0 ]", "", s)
    if not _PLAIN.match(s):
        return None
    try:
        return Decimal(s)
    except InvalidOperation:
        return None


def to_datetime(s: str, fmt: str | None) -> datetime | None:
    s = clean(s)
    if fmt:
        try:
            return datetime.strptime(s, fmt)
        except ValueError:
            pass
    for parse in (datetime.fromisoformat, date.fromisoformat):
        try:
            d = parse(s)
            return d if isinstance(d, datetime) else datetime(d.year, d.month, d.day)
        except ValueError:
            pass
    return None
