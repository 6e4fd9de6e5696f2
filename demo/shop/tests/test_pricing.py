from decimal import Decimal

import pytest

from acme_shop.orders.models import Cart
from acme_shop.services.tax import TaxCalculator, UnknownRegion, allocate_discount


def test_automatic_category_discount_applies_without_a_code(pricing, cart):
    quote = pricing.quote(cart)
    assert quote.subtotal == Decimal("48.50")
    assert quote.discount_code == "BOOKS15"
    assert quote.discount == Decimal("6.00")


def test_the_larger_discount_wins(pricing, cart):
    cart.coupon_code = "welcome10"
    quote = pricing.quote(cart)
    assert quote.discount_code == "BOOKS15"
    cart.add(pricing.catalog.get("MUG"), 5)
    quote = pricing.quote(cart)
    assert quote.discount_code == "WELCOME10"
    assert quote.discount == Decimal("9.10")


def test_tax_is_charged_on_the_discounted_amount(pricing, cart):
    quote = pricing.quote(cart)
    assert quote.tax == Decimal("3.87")
    assert quote.total == quote.subtotal - quote.discount + quote.shipping + quote.tax


def test_shipping_is_free_for_gift_cards_only(pricing, catalog):
    cart = Cart("c-2")
    cart.add(catalog.get("GIFT"))
    assert pricing.quote(cart).shipping == Decimal("0.00")
    cart.add(catalog.get("MUG"))
    assert pricing.quote(cart).shipping == Decimal("4.90")


def test_gift_cards_are_tax_exempt(catalog):
    cart = Cart("c-3", region="FR")
    cart.add(catalog.get("GIFT"), 2)
    assert TaxCalculator().tax_for(cart, catalog) == Decimal("0.00")


def test_unknown_region_is_rejected(catalog):
    cart = Cart("c-4", region="XX")
    cart.add(catalog.get("MUG"))
    with pytest.raises(UnknownRegion):
        TaxCalculator().tax_for(cart, catalog)


def test_discount_shares_add_up(cart):
    shares = allocate_discount(cart, Decimal("1.00"))
    assert sum(shares.values()) == Decimal("1.00")
