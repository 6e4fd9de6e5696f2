from decimal import Decimal

import pytest

from acme_shop.catalog.models import Category, Product
from acme_shop.catalog.repository import ProductRepository
from acme_shop.events import EventBus
from acme_shop.orders.models import Cart
from acme_shop.orders.repository import OrderRepository
from acme_shop.services.checkout import CheckoutService
from acme_shop.services.discounts import BulkDiscount, CategoryDiscount, PercentageDiscount
from acme_shop.services.inventory import InventoryService
from acme_shop.services.notifications import NotificationService, Outbox
from acme_shop.services.payments import FakeGateway
from acme_shop.services.pricing import PricingService
from acme_shop.services.tax import TaxCalculator


@pytest.fixture
def catalog():
    return ProductRepository(
        [
            Product("BOOK", "A book", Decimal("20.00"), Category.BOOKS),
            Product("MUG", "A mug", Decimal("8.50"), Category.CLOTHING),
            Product("GIFT", "Gift card", Decimal("25.00"), Category.GIFT_CARD),
            Product("GPU", "Graphics card", Decimal("600.00"), Category.ELECTRONICS, max_per_order=2),
        ]
    )


@pytest.fixture
def bus():
    return EventBus()


@pytest.fixture
def outbox(bus):
    box = Outbox()
    NotificationService(box, "ops@test").register(bus)
    return box


@pytest.fixture
def inventory(bus):
    return InventoryService(bus, {"BOOK": 10, "MUG": 6, "GIFT": 100, "GPU": 3}, low_stock_threshold=2)


@pytest.fixture
def pricing(catalog):
    discounts = [
        PercentageDiscount("WELCOME10", Decimal("10")),
        CategoryDiscount("BOOKS15", Decimal("15"), Category.BOOKS, automatic=True),
        BulkDiscount("BULK5", 5, Decimal("8"), automatic=True),
    ]
    return PricingService(catalog, TaxCalculator(), discounts)


@pytest.fixture
def checkout(catalog, inventory, pricing, bus, outbox):
    return CheckoutService(catalog, inventory, pricing, FakeGateway(Decimal("1000")), OrderRepository(), bus)


@pytest.fixture
def cart(catalog):
    c = Cart("c-1", region="DE")
    c.add(catalog.get("BOOK"), 2)
    c.add(catalog.get("MUG"), 1)
    return c
