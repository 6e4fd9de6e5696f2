"""Payment gateways."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Iterable

from ..utils import new_id


class PaymentDeclined(Exception):
    """The payment provider refused the charge."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class PaymentReceipt:
    reference: str
    customer_id: str
    amount: Decimal
    currency: str


class PaymentGateway:
    """The interface checkout uses to take and return money."""

    def charge(self, customer_id: str, amount: Decimal, currency: str) -> PaymentReceipt:
        raise NotImplementedError

    def refund(self, reference: str, amount: Decimal) -> None:
        raise NotImplementedError


class FakeGateway(PaymentGateway):
    """Approves charges up to a limit; used in development and in tests."""

    def __init__(self, limit: Decimal, blocked_customers: Iterable[str] = ()) -> None:
        self.limit = limit
        self.blocked = set(blocked_customers)
        self.charges: dict[str, PaymentReceipt] = {}
        self.refunded: dict[str, Decimal] = {}

    def charge(self, customer_id: str, amount: Decimal, currency: str) -> PaymentReceipt:
        if amount <= 0:
            raise ValueError("charge amount must be positive")
        if customer_id in self.blocked:
            raise PaymentDeclined("customer is blocked")
        if amount > self.limit:
            raise PaymentDeclined(f"amount {amount} {currency} exceeds the limit of {self.limit}")
        receipt = PaymentReceipt(new_id("pay"), customer_id, amount, currency)
        self.charges[receipt.reference] = receipt
        return receipt

    def refund(self, reference: str, amount: Decimal) -> None:
        receipt = self.charges.get(reference)
        if receipt is None:
            raise KeyError(f"unknown payment {reference}")
        already = self.refunded.get(reference, Decimal("0"))
        if already + amount > receipt.amount:
            raise ValueError(f"{reference}: refund would exceed the amount charged")
        self.refunded[reference] = already + amount
