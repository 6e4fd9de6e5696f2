"""Price a cart: subtotal, the best discount, shipping and tax."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Iterable

from ..catalog.repository import ProductRepository
from ..constants import DEFAULT_CURRENCY, FLAT_SHIPPING_FEE, FREE_SHIPPING_THRESHOLD
from ..orders.models import Cart
from ..utils import format_money, round_money
from .discounts import Discount
from .tax import TaxCalculator


@dataclass(frozen=True)
class PriceQuote:
    """What a cart costs right now. Amounts are rounded to cents."""

    subtotal: Decimal
    discount: Decimal
    discount_code: str | None
    shipping: Decimal
    tax: Decimal
    currency: str = DEFAULT_CURRENCY

    @property
    def total(self) -> Decimal:
        return round_money(self.subtotal - self.discount + self.shipping + self.tax)

    def summary(self) -> str:
        rows = [
            ("Subtotal", self.subtotal),
            (f"Discount ({self.discount_code})" if self.discount_code else "Discount", -self.discount),
            ("Shipping", self.shipping),
            ("Tax", self.tax),
            ("Total", self.total),
        ]
        return "\n".join(f"{label:<24}{format_money(value, self.currency):>12}" for label, value in rows)


class PricingService:
    """Turns a cart into a :class:`PriceQuote`."""

    def __init__(
        self,
        catalog: ProductRepository,
        tax: TaxCalculator,
        discounts: Iterable[Discount] = (),
        currency: str = DEFAULT_CURRENCY,
        free_shipping_threshold: Decimal = FREE_SHIPPING_THRESHOLD,
        flat_shipping_fee: Decimal = FLAT_SHIPPING_FEE,
    ) -> None:
        self.catalog = catalog
        self.tax = tax
        self.discounts = list(discounts)
        self.currency = currency
        self.free_shipping_threshold = free_shipping_threshold
        self.flat_shipping_fee = flat_shipping_fee

    def quote(self, cart: Cart) -> PriceQuote:
        subtotal = round_money(cart.subtotal())
        best, discount = self.best_discount(cart)
        shipping = self.shipping_for(cart, subtotal - discount)
        tax = self.tax.tax_for(cart, self.catalog, discount)
        return PriceQuote(
            subtotal=subtotal,
            discount=discount,
            discount_code=best.code if best else None,
            shipping=shipping,
            tax=tax,
            currency=self.currency,
        )

    def eligible_discounts(self, cart: Cart) -> list[Discount]:
        """Automatic discounts, plus the one whose code the customer entered, that the cart qualifies for."""
        entered = (cart.coupon_code or "").upper()
        return [
            d
            for d in self.discounts
            if (d.automatic or d.code == entered) and d.applies_to(cart, self.catalog)
        ]

    def best_discount(self, cart: Cart) -> tuple[Discount | None, Decimal]:
        """The single eligible discount worth the most; discounts never stack.

        On a tie the discount listed first wins. The amount is capped at the subtotal.
        """
        best: Discount | None = None
        best_amount = Decimal("0")
        cap = cart.subtotal()
        for discount in self.eligible_discounts(cart):
            value = min(discount.amount(cart, self.catalog), cap)
            if value > best_amount:
                best, best_amount = discount, value
        return best, best_amount

    def shipping_for(self, cart: Cart, discounted_subtotal: Decimal) -> Decimal:
        """Flat-rate shipping, free for digital-only carts and above the threshold."""
        if all(self.catalog.get(sku).is_digital for sku in cart.lines):
            return Decimal("0.00")
        if discounted_subtotal >= self.free_shipping_threshold:
            return Decimal("0.00")
        return self.flat_shipping_fee
