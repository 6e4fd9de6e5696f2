"""Order entities: the cart a customer fills and the order it becomes."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from enum import Enum

from ..catalog.models import Product
from ..constants import DEFAULT_REGION, MAX_LINE_QUANTITY
from ..utils import round_money, utcnow


class OrderStatus(str, Enum):
    PENDING = "pending"
    PAID = "paid"
    SHIPPED = "shipped"
    CANCELLED = "cancelled"


class InvalidTransition(Exception):
    """An order was asked to move to a status it cannot reach from its current one."""


@dataclass
class CartLine:
    sku: str
    quantity: int
    unit_price: Decimal

    @property
    def subtotal(self) -> Decimal:
        return round_money(self.unit_price * self.quantity)


@dataclass
class Cart:
    """What a customer intends to buy. Prices are captured when a line is added."""

    customer_id: str
    region: str = DEFAULT_REGION
    coupon_code: str | None = None
    lines: dict[str, CartLine] = field(default_factory=dict)

    def add(self, product: Product, quantity: int = 1) -> CartLine:
        """Add units of a product, merging with an existing line for the same SKU."""
        if quantity < 1:
            raise ValueError("quantity must be at least 1")
        current = self.lines[product.sku].quantity if product.sku in self.lines else 0
        limit = min(product.max_per_order, MAX_LINE_QUANTITY)
        if current + quantity > limit:
            raise ValueError(
                f"{product.sku}: at most {limit} units per order (cart has {current})"
            )
        line = CartLine(product.sku, current + quantity, product.unit_price)
        self.lines[product.sku] = line
        return line

    def remove(self, sku: str) -> None:
        self.lines.pop(sku, None)

    def subtotal(self) -> Decimal:
        return sum((line.subtotal for line in self.lines.values()), Decimal("0"))

    def item_count(self) -> int:
        return sum(line.quantity for line in self.lines.values())

    def is_empty(self) -> bool:
        return not self.lines


_ALLOWED = {
    OrderStatus.PENDING: {OrderStatus.PAID, OrderStatus.CANCELLED},
    OrderStatus.PAID: {OrderStatus.SHIPPED, OrderStatus.CANCELLED},
    OrderStatus.SHIPPED: set(),
    OrderStatus.CANCELLED: set(),
}


@dataclass
class Order:
    """A placed order. Amounts are final once the order exists."""

    id: str
    customer_id: str
    region: str
    lines: list[CartLine]
    subtotal: Decimal
    discount: Decimal
    shipping: Decimal
    tax: Decimal
    total: Decimal
    currency: str
    status: OrderStatus = OrderStatus.PENDING
    discount_code: str | None = None
    payment_ref: str | None = None
    created_at: datetime = field(default_factory=utcnow)

    @classmethod
    def from_cart(cls, order_id: str, cart: Cart, quote, payment_ref: str | None = None) -> "Order":
        """Freeze a cart and its price quote into an order."""
        return cls(
            id=order_id,
            customer_id=cart.customer_id,
            region=cart.region,
            lines=[CartLine(l.sku, l.quantity, l.unit_price) for l in cart.lines.values()],
            subtotal=quote.subtotal,
            discount=quote.discount,
            shipping=quote.shipping,
            tax=quote.tax,
            total=quote.total,
            currency=quote.currency,
            discount_code=quote.discount_code,
            payment_ref=payment_ref,
        )

    def transition(self, new_status: OrderStatus) -> None:
        if new_status not in _ALLOWED[self.status]:
            raise InvalidTransition(f"order {self.id}: cannot go from {self.status.value} to {new_status.value}")
        self.status = new_status

    def mark_paid(self, payment_ref: str) -> None:
        self.transition(OrderStatus.PAID)
        self.payment_ref = payment_ref

    def cancel(self) -> None:
        self.transition(OrderStatus.CANCELLED)

    def ship(self) -> None:
        self.transition(OrderStatus.SHIPPED)

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "customer_id": self.customer_id,
            "region": self.region,
            "lines": [
                {"sku": l.sku, "quantity": l.quantity, "unit_price": str(l.unit_price)}
                for l in self.lines
            ],
            "subtotal": str(self.subtotal),
            "discount": str(self.discount),
            "shipping": str(self.shipping),
            "tax": str(self.tax),
            "total": str(self.total),
            "currency": self.currency,
            "status": self.status.value,
            "discount_code": self.discount_code,
            "payment_ref": self.payment_ref,
            "created_at": self.created_at.isoformat(),
        }

    @classmethod
    def from_dict(cls, data: dict) -> "Order":
        return cls(
            id=data["id"],
            customer_id=data["customer_id"],
            region=data["region"],
            lines=[
                CartLine(l["sku"], int(l["quantity"]), Decimal(l["unit_price"]))
                for l in data["lines"]
            ],
            subtotal=Decimal(data["subtotal"]),
            discount=Decimal(data["discount"]),
            shipping=Decimal(data["shipping"]),
            tax=Decimal(data["tax"]),
            total=Decimal(data["total"]),
            currency=data["currency"],
            status=OrderStatus(data["status"]),
            discount_code=data.get("discount_code"),
            payment_ref=data.get("payment_ref"),
            created_at=datetime.fromisoformat(data["created_at"]),
        )
