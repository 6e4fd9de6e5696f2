"""Value-added tax per region and product category."""

from __future__ import annotations

from decimal import Decimal
from typing import Mapping

from ..catalog.models import Category
from ..catalog.repository import ProductRepository
from ..orders.models import Cart
from ..utils import round_money

DEFAULT_RATES: dict[str, Decimal] = {
    "DE": Decimal("0.19"),
    "FR": Decimal("0.20"),
    "NL": Decimal("0.21"),
    "AT": Decimal("0.20"),
}

REDUCED_RATES: dict[str, Decimal] = {
    "DE": Decimal("0.07"),
    "FR": Decimal("0.055"),
    "NL": Decimal("0.09"),
    "AT": Decimal("0.10"),
}

REDUCED_CATEGORIES = frozenset({Category.GROCERY, Category.BOOKS})


class UnknownRegion(ValueError):
    """No tax rate is known for the customer's region."""


class TaxCalculator:
    """Computes the tax due on a cart after its discount."""

    def __init__(
        self,
        rates: Mapping[str, Decimal] | None = None,
        exempt: frozenset[Category] = frozenset({Category.GIFT_CARD}),
    ) -> None:
        self.rates = {**DEFAULT_RATES, **(rates or {})}
        self.exempt = exempt

    def rate_for(self, region: str, category: Category) -> Decimal:
        region = region.upper()
        if category in self.exempt:
            return Decimal("0")
        if region not in self.rates:
            raise UnknownRegion(f"no tax rate for region {region!r}")
        if category in REDUCED_CATEGORIES and region in REDUCED_RATES:
            return REDUCED_RATES[region]
        return self.rates[region]

    def tax_for(self, cart: Cart, catalog: ProductRepository, discount: Decimal = Decimal("0")) -> Decimal:
        """Tax on each line's share of the discounted subtotal, rounded once at the end."""
        shares = allocate_discount(cart, discount)
        total = Decimal("0")
        for sku, line in cart.lines.items():
            category = catalog.get(sku).category
            total += (line.subtotal - shares[sku]) * self.rate_for(cart.region, category)
        return round_money(total)


def allocate_discount(cart: Cart, discount: Decimal) -> dict[str, Decimal]:
    """Spread a cart-level discount over the lines in proportion to their subtotals.

    The last line absorbs the rounding remainder so the shares add up exactly.
    """
    subtotal = cart.subtotal()
    skus = list(cart.lines)
    if not skus or discount <= 0 or subtotal <= 0:
        return {sku: Decimal("0") for sku in skus}
    shares: dict[str, Decimal] = {}
    remaining = discount
    for sku in skus[:-1]:
        share = round_money(discount * cart.lines[sku].subtotal / subtotal)
        shares[sku] = share
        remaining -= share
    shares[skus[-1]] = remaining
    return shares
