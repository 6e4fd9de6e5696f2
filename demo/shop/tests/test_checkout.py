import pytest

from acme_shop.events import OrderPlaced, StockLow
from acme_shop.orders.models import Cart, OrderStatus
from acme_shop.services.checkout import CheckoutError
from acme_shop.services.inventory import OutOfStock
from acme_shop.services.payments import PaymentDeclined


def test_checkout_places_a_paid_order(checkout, cart, inventory, outbox):
    order = checkout.checkout(cart)
    assert order.status is OrderStatus.PAID
    assert inventory.on_hand("BOOK") == 8
    assert isinstance(checkout.bus.published[0], OrderPlaced)
    assert outbox.sent[0].subject == f"Order {order.id} confirmed"


def test_declined_payment_releases_the_reservation(checkout, catalog, inventory):
    cart = Cart("c-9")
    cart.add(catalog.get("GPU"), 2)
    with pytest.raises(PaymentDeclined):
        checkout.checkout(cart)
    assert inventory.available("GPU") == 3
    assert len(checkout.orders) == 0


def test_out_of_stock_reserves_nothing(checkout, catalog, inventory):
    cart = Cart("c-5")
    cart.add(catalog.get("BOOK"), 3)
    cart.add(catalog.get("GPU"), 2)
    inventory.commit(inventory.reserve(_single(catalog, "GPU", 2)))
    with pytest.raises(OutOfStock):
        checkout.checkout(cart)
    assert inventory.available("BOOK") == 10


def test_low_stock_alert_goes_to_ops(checkout, catalog, outbox):
    cart = Cart("c-6")
    cart.add(catalog.get("GPU"), 1)
    checkout.checkout(cart)
    assert any(isinstance(e, StockLow) for e in checkout.bus.published)
    assert any(m.to == "ops@test" for m in outbox.sent)


def test_cancel_refunds_and_restocks(checkout, cart, inventory):
    order = checkout.checkout(cart)
    checkout.cancel(order.id)
    assert order.status is OrderStatus.CANCELLED
    assert inventory.on_hand("BOOK") == 10
    assert checkout.payments.refunded[order.payment_ref] == order.total


def test_empty_cart_is_rejected(checkout):
    with pytest.raises(CheckoutError):
        checkout.checkout(Cart("c-7"))


def _single(catalog, sku, qty):
    cart = Cart("stock")
    cart.add(catalog.get(sku), qty)
    return cart
