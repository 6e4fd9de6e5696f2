"""The ``acme-shop`` command: quote, check out and cancel orders, show stock."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass

from .catalog.repository import ProductNotFound, ProductRepository
from .config import ConfigError, Settings, load_settings
from .constants import MAX_LINE_QUANTITY
from .events import EventBus
from .orders.models import Cart, InvalidTransition
from .orders.repository import JsonOrderRepository, OrderNotFound
from .services.checkout import CheckoutError, CheckoutService
from .services.discounts import discount_from_spec
from .services.inventory import InventoryService, OutOfStock
from .services.notifications import NotificationService, Outbox
from .services.payments import FakeGateway, PaymentDeclined
from .services.pricing import PricingService
from .services.tax import TaxCalculator, UnknownRegion

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_OUT_OF_STOCK = 3
EXIT_PAYMENT_DECLINED = 4


@dataclass
class App:
    settings: Settings
    catalog: ProductRepository
    inventory: InventoryService
    pricing: PricingService
    checkout: CheckoutService
    orders: JsonOrderRepository
    outbox: Outbox


def build_app(settings: Settings) -> App:
    """Wire the services together from the settings."""
    catalog, stock = ProductRepository.from_json(settings.catalog_path)
    bus = EventBus()
    outbox = Outbox()
    NotificationService(outbox, settings.ops_email).register(bus)
    inventory = InventoryService(bus, stock, low_stock_threshold=settings.low_stock_threshold)
    pricing = PricingService(
        catalog,
        TaxCalculator(settings.tax_rates, exempt=settings.tax_exempt),
        [discount_from_spec(code, spec) for code, spec in settings.coupons.items()],
        currency=settings.currency,
        free_shipping_threshold=settings.free_shipping_threshold,
        flat_shipping_fee=settings.flat_shipping_fee,
    )
    orders = JsonOrderRepository(settings.orders_path)
    checkout = CheckoutService(catalog, inventory, pricing, FakeGateway(settings.payment_limit), orders, bus)
    return App(settings, catalog, inventory, pricing, checkout, orders, outbox)


def parse_item(text: str) -> tuple[str, int]:
    """Parse ``SKU`` or ``SKU:QUANTITY`` from the command line."""
    sku, _, qty = text.partition(":")
    try:
        quantity = int(qty) if qty else 1
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad quantity in {text!r}") from None
    if not 1 <= quantity <= MAX_LINE_QUANTITY:
        raise argparse.ArgumentTypeError(f"quantity must be between 1 and {MAX_LINE_QUANTITY}: {text!r}")
    return sku.strip().upper(), quantity


def build_cart(app: App, args: argparse.Namespace) -> Cart:
    cart = Cart(args.customer, region=args.region or app.settings.default_region, coupon_code=args.coupon)
    for sku, quantity in args.items:
        cart.add(app.catalog.get(sku), quantity)
    return cart


def cmd_quote(app: App, args: argparse.Namespace) -> int:
    quote = app.pricing.quote(build_cart(app, args))
    print(quote.summary())
    return EXIT_OK


def cmd_checkout(app: App, args: argparse.Namespace) -> int:
    cart = build_cart(app, args)
    try:
        order = app.checkout.checkout(cart)
    except OutOfStock as e:
        print(f"out of stock: {e}", file=sys.stderr)
        return EXIT_OUT_OF_STOCK
    except PaymentDeclined as e:
        print(f"payment declined: {e.reason}", file=sys.stderr)
        return EXIT_PAYMENT_DECLINED
    print(json.dumps(order.to_dict(), indent=2))
    return EXIT_OK


def cmd_cancel(app: App, args: argparse.Namespace) -> int:
    order = app.checkout.cancel(args.order_id, reason=args.reason)
    print(f"{order.id}: {order.status.value}")
    return EXIT_OK


def cmd_stock(app: App, args: argparse.Namespace) -> int:
    skus = [s.upper() for s in args.skus] or [p.sku for p in app.catalog.find()]
    for sku in skus:
        app.catalog.get(sku)
        print(f"{sku:<12}{app.inventory.on_hand(sku):>6} on hand{app.inventory.available(sku):>6} available")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="acme-shop", description=__doc__)
    parser.add_argument("--config", help="settings file (default: $ACME_SHOP_CONFIG or config/shop.toml)")
    sub = parser.add_subparsers(dest="command", required=True)

    for name, func, help_text in (
        ("quote", cmd_quote, "price a cart without buying it"),
        ("checkout", cmd_checkout, "buy a cart"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--customer", required=True)
        p.add_argument("--region", help="two-letter region code (default from the settings)")
        p.add_argument("--coupon")
        p.add_argument("items", nargs="+", type=parse_item, metavar="SKU[:QTY]")
        p.set_defaults(func=func)

    p = sub.add_parser("cancel", help="cancel an order that has not shipped")
    p.add_argument("order_id")
    p.add_argument("--reason", default="customer request")
    p.set_defaults(func=cmd_cancel)

    p = sub.add_parser("stock", help="show stock levels")
    p.add_argument("skus", nargs="*")
    p.set_defaults(func=cmd_stock)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        app = build_app(load_settings(args.config))
        return args.func(app, args)
    except (ConfigError, CheckoutError, ProductNotFound, OrderNotFound, InvalidTransition, UnknownRegion, ValueError) as e:
        print(f"acme-shop: error: {e}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
