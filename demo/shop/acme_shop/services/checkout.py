"""Checkout: turn a cart into a paid order."""

from __future__ import annotations

from ..catalog.repository import ProductNotFound, ProductRepository
from ..events import EventBus, OrderCancelled, OrderPlaced
from ..orders.models import Cart, Order, OrderStatus
from ..orders.repository import OrderRepository
from .inventory import InventoryService
from .payments import PaymentGateway
from .pricing import PricingService


class CheckoutError(Exception):
    """The cart cannot be checked out as it is."""


class CheckoutService:
    def __init__(
        self,
        catalog: ProductRepository,
        inventory: InventoryService,
        pricing: PricingService,
        payments: PaymentGateway,
        orders: OrderRepository,
        bus: EventBus,
    ) -> None:
        self.catalog = catalog
        self.inventory = inventory
        self.pricing = pricing
        self.payments = payments
        self.orders = orders
        self.bus = bus

    def checkout(self, cart: Cart) -> Order:
        """Reserve stock, price the cart, charge the customer and record the order.

        Raises ``CheckoutError`` for an invalid cart, ``OutOfStock`` when a line
        cannot be reserved and ``PaymentDeclined`` when the charge is refused.
        """
        self._validate(cart)
        reservations = self.inventory.reserve(cart)
        try:
            quote = self.pricing.quote(cart)
            receipt = self.payments.charge(cart.customer_id, quote.total, quote.currency)
        except Exception:
            self.inventory.release(reservations)
            raise
        self.inventory.commit(reservations)

        order = Order.from_cart(self.orders.next_id(), cart, quote)
        order.mark_paid(receipt.reference)
        self.orders.save(order)
        self.bus.publish(OrderPlaced(order.id, order.customer_id, order.total, order.currency))
        return order

    def cancel(self, order_id: str, reason: str = "customer request") -> Order:
        """Cancel an unshipped order: refund the payment and put the stock back."""
        order = self.orders.get(order_id)
        was_paid = order.status is OrderStatus.PAID
        order.cancel()
        if was_paid and order.payment_ref:
            self.payments.refund(order.payment_ref, order.total)
        for line in order.lines:
            self.inventory.restock(line.sku, line.quantity)
        self.orders.save(order)
        self.bus.publish(OrderCancelled(order.id, order.customer_id, reason))
        return order

    def _validate(self, cart: Cart) -> None:
        if cart.is_empty():
            raise CheckoutError("the cart is empty")
        for sku in cart.lines:
            try:
                product = self.catalog.get(sku)
            except ProductNotFound as e:
                raise CheckoutError(str(e)) from None
            if not product.active:
                raise CheckoutError(f"{sku} is no longer sold")
