"""Small helpers for money, identifiers and time."""

from __future__ import annotations

import itertools
from datetime import datetime, timezone
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from .constants import DEFAULT_CURRENCY, MONEY_QUANTUM

_CURRENCY_SYMBOLS = {"EUR": "€", "USD": "$", "GBP": "£"}
_counters: dict[str, itertools.count] = {}


def round_money(amount) -> Decimal:
    """Round an amount to whole cents, halves away from zero, as invoices require."""
    return Decimal(amount).quantize(MONEY_QUANTUM, rounding=ROUND_HALF_UP)


def parse_money(text: str) -> Decimal:
    """Parse a user-supplied amount such as ``"12.5"`` or ``"1,299.00"``."""
    cleaned = str(text).strip().replace(",", "")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        raise ValueError(f"not an amount of money: {text!r}") from None
    if value < 0:
        raise ValueError(f"amount must not be negative: {text!r}")
    return value


def format_money(amount: Decimal, currency: str = DEFAULT_CURRENCY) -> str:
    """Format an amount for humans, e.g. ``€12.50`` or ``-€3.00``."""
    symbol = _CURRENCY_SYMBOLS.get(currency, currency + " ")
    sign = "-" if amount < 0 else ""
    return f"{sign}{symbol}{abs(amount):,.2f}"


def new_id(prefix: str) -> str:
    """Return a process-unique identifier such as ``ord-000017``."""
    counter = _counters.setdefault(prefix, itertools.count(1))
    return f"{prefix}-{next(counter):06d}"


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(timezone.utc)
