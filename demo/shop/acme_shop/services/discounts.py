"""Discounts and coupons.

A discount is offered either automatically or when the customer enters its
code. Which discount a cart finally receives is decided by the pricing service.
"""

from __future__ import annotations

from decimal import Decimal

from ..catalog.models import Category
from ..catalog.repository import ProductRepository
from ..orders.models import Cart
from ..utils import parse_money, round_money

ZERO = Decimal("0")


class Discount:
    """A price reduction on a cart."""

    def __init__(self, code: str, description: str = "", automatic: bool = False) -> None:
        self.code = code.upper()
        self.description = description
        self.automatic = automatic

    def applies_to(self, cart: Cart, catalog: ProductRepository) -> bool:
        """Whether the cart qualifies at all."""
        return not cart.is_empty()

    def amount(self, cart: Cart, catalog: ProductRepository) -> Decimal:
        """How much the discount takes off the cart's subtotal."""
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.code}: {self.description or type(self).__name__}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.code}>"


class PercentageDiscount(Discount):
    """A percentage off the whole cart, optionally above a minimum subtotal."""

    def __init__(self, code: str, percent: Decimal, min_subtotal: Decimal = ZERO, **kwargs) -> None:
        super().__init__(code, **kwargs)
        if not 0 < percent <= 100:
            raise ValueError(f"{code}: percent must be in (0, 100]")
        self.percent = Decimal(percent)
        self.min_subtotal = min_subtotal

    def applies_to(self, cart: Cart, catalog: ProductRepository) -> bool:
        return super().applies_to(cart, catalog) and cart.subtotal() >= self.min_subtotal

    def amount(self, cart: Cart, catalog: ProductRepository) -> Decimal:
        return round_money(self.eligible_subtotal(cart, catalog) * self.percent / 100)

    def eligible_subtotal(self, cart: Cart, catalog: ProductRepository) -> Decimal:
        return cart.subtotal()


class CategoryDiscount(PercentageDiscount):
    """A percentage off the lines of one category only."""

    def __init__(self, code: str, percent: Decimal, category: Category, **kwargs) -> None:
        super().__init__(code, percent, **kwargs)
        self.category = category

    def applies_to(self, cart: Cart, catalog: ProductRepository) -> bool:
        return super().applies_to(cart, catalog) and self.eligible_subtotal(cart, catalog) > 0

    def eligible_subtotal(self, cart: Cart, catalog: ProductRepository) -> Decimal:
        return sum(
            (line.subtotal for line in cart.lines.values() if catalog.get(line.sku).category is self.category),
            ZERO,
        )


class FixedAmountDiscount(Discount):
    """A fixed amount off carts above a minimum subtotal; never more than the subtotal."""

    def __init__(self, code: str, value: Decimal, min_subtotal: Decimal = ZERO, **kwargs) -> None:
        super().__init__(code, **kwargs)
        self.value = value
        self.min_subtotal = min_subtotal

    def applies_to(self, cart: Cart, catalog: ProductRepository) -> bool:
        return super().applies_to(cart, catalog) and cart.subtotal() >= self.min_subtotal

    def amount(self, cart: Cart, catalog: ProductRepository) -> Decimal:
        return round_money(min(self.value, cart.subtotal()))


class BulkDiscount(Discount):
    """A percentage off every line holding at least ``min_quantity`` units."""

    def __init__(self, code: str, min_quantity: int, percent: Decimal, **kwargs) -> None:
        super().__init__(code, **kwargs)
        self.min_quantity = min_quantity
        self.percent = Decimal(percent)

    def applies_to(self, cart: Cart, catalog: ProductRepository) -> bool:
        return any(line.quantity >= self.min_quantity for line in cart.lines.values())

    def amount(self, cart: Cart, catalog: ProductRepository) -> Decimal:
        eligible = sum(
            (line.subtotal for line in cart.lines.values() if line.quantity >= self.min_quantity),
            ZERO,
        )
        return round_money(eligible * self.percent / 100)


def discount_from_spec(code: str, spec: dict) -> Discount:
    """Build a discount from a ``[coupons.CODE]`` table of the settings file."""
    kind = spec.get("type")
    common = {"description": spec.get("description", ""), "automatic": bool(spec.get("automatic", False))}
    min_subtotal = parse_money(spec.get("min_subtotal", "0"))
    if kind == "percentage":
        return PercentageDiscount(code, Decimal(str(spec["percent"])), min_subtotal=min_subtotal, **common)
    if kind == "category":
        return CategoryDiscount(
            code,
            Decimal(str(spec["percent"])),
            Category.parse(spec["category"]),
            min_subtotal=min_subtotal,
            **common,
        )
    if kind == "fixed":
        return FixedAmountDiscount(code, parse_money(spec["value"]), min_subtotal=min_subtotal, **common)
    if kind == "bulk":
        return BulkDiscount(code, int(spec["min_quantity"]), Decimal(str(spec["percent"])), **common)
    raise ValueError(f"coupons.{code}.type: unknown discount type {kind!r}")
