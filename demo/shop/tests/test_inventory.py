from datetime import datetime, timedelta, timezone

import pytest

from acme_shop.events import EventBus
from acme_shop.orders.models import Cart
from acme_shop.services.inventory import InventoryService, OutOfStock


class FakeClock:
    def __init__(self):
        self.now = datetime(2024, 3, 1, 12, 0, tzinfo=timezone.utc)

    def __call__(self):
        return self.now


def test_reservations_expire(catalog):
    clock = FakeClock()
    inv = InventoryService(EventBus(), {"BOOK": 3}, ttl_seconds=60, clock=clock)
    cart = Cart("c-1")
    cart.add(catalog.get("BOOK"), 3)
    inv.reserve(cart)
    assert inv.available("BOOK") == 0
    clock.now += timedelta(seconds=61)
    assert inv.expire_stale() == 1
    assert inv.available("BOOK") == 3


def test_reserve_is_all_or_nothing(catalog, inventory):
    cart = Cart("c-2")
    cart.add(catalog.get("BOOK"), 4)
    cart.add(catalog.get("MUG"), 6)
    cart.add(catalog.get("GPU"), 2)
    inventory.commit(inventory.reserve(_cart(catalog, "GPU", 2)))
    with pytest.raises(OutOfStock) as err:
        inventory.reserve(cart)
    assert err.value.sku == "GPU"
    assert inventory.available("BOOK") == 10
    assert inventory.available("MUG") == 6


def _cart(catalog, sku, qty):
    cart = Cart("stock")
    cart.add(catalog.get(sku), qty)
    return cart
