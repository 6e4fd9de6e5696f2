"""Customer and operations e-mails, sent in response to events."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..events import EventBus, OrderCancelled, OrderPlaced, StockLow
from ..utils import format_money


@dataclass(frozen=True)
class Message:
    to: str
    subject: str
    body: str


class Outbox:
    """Collects outgoing messages; a mail relay drains it in production."""

    def __init__(self) -> None:
        self.sent: list[Message] = []

    def send(self, to: str, subject: str, body: str) -> Message:
        message = Message(to, subject, body)
        self.sent.append(message)
        return message


def default_customer_email(customer_id: str) -> str:
    return f"{customer_id}@customers.acme.example"


class NotificationService:
    def __init__(
        self,
        outbox: Outbox,
        ops_email: str,
        customer_email: Callable[[str], str] = default_customer_email,
    ) -> None:
        self.outbox = outbox
        self.ops_email = ops_email
        self.customer_email = customer_email

    def register(self, bus: EventBus) -> None:
        bus.subscribe(OrderPlaced, self.on_order_placed)
        bus.subscribe(OrderCancelled, self.on_order_cancelled)
        bus.subscribe(StockLow, self.on_stock_low)

    def on_order_placed(self, event: OrderPlaced) -> None:
        self.outbox.send(
            self.customer_email(event.customer_id),
            f"Order {event.order_id} confirmed",
            f"Thank you for your order. We charged {format_money(event.total, event.currency)}.",
        )

    def on_order_cancelled(self, event: OrderCancelled) -> None:
        self.outbox.send(
            self.customer_email(event.customer_id),
            f"Order {event.order_id} cancelled",
            f"Your order was cancelled ({event.reason}). Any payment will be refunded.",
        )

    def on_stock_low(self, event: StockLow) -> None:
        self.outbox.send(
            self.ops_email,
            f"Low stock: {event.sku}",
            f"{event.sku} has {event.available} units available (threshold {event.threshold}).",
        )
