"""Stock levels and reservations.

Checkout reserves stock before taking payment, then commits the reservation
once the payment succeeds, or releases it when anything fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable, Iterable

from ..constants import LOW_STOCK_THRESHOLD, MAX_LINE_QUANTITY, RESERVATION_TTL_SECONDS
from ..events import EventBus, StockLow
from ..orders.models import Cart
from ..utils import new_id, utcnow


@dataclass(frozen=True)
class Reservation:
    id: str
    sku: str
    quantity: int
    expires_at: datetime


class OutOfStock(Exception):
    def __init__(self, sku: str, requested: int, available: int) -> None:
        super().__init__(f"{sku}: requested {requested}, only {available} available")
        self.sku = sku
        self.requested = requested
        self.available = available


class InventoryService:
    """Tracks units on hand and units held by open reservations."""

    def __init__(
        self,
        bus: EventBus,
        on_hand: dict[str, int] | None = None,
        low_stock_threshold: int = LOW_STOCK_THRESHOLD,
        ttl_seconds: int = RESERVATION_TTL_SECONDS,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.bus = bus
        self._on_hand: dict[str, int] = dict(on_hand or {})
        self._reservations: dict[str, Reservation] = {}
        self.low_stock_threshold = low_stock_threshold
        self.ttl = timedelta(seconds=ttl_seconds)
        self._clock = clock

    def on_hand(self, sku: str) -> int:
        return self._on_hand.get(sku, 0)

    def reserved(self, sku: str) -> int:
        return sum(r.quantity for r in self._reservations.values() if r.sku == sku)

    def available(self, sku: str) -> int:
        return self.on_hand(sku) - self.reserved(sku)

    def reserve(self, cart: Cart) -> list[Reservation]:
        """Reserve every line of the cart, or nothing at all."""
        self.expire_stale()
        made: list[Reservation] = []
        try:
            for line in sorted(cart.lines.values(), key=lambda l: l.sku):
                made.append(self._reserve_line(line.sku, line.quantity))
        except OutOfStock:
            self.release(made)
            raise
        return made

    def _reserve_line(self, sku: str, quantity: int) -> Reservation:
        if not 1 <= quantity <= MAX_LINE_QUANTITY:
            raise ValueError(f"{sku}: cannot reserve {quantity} units in one line")
        available = self.available(sku)
        if quantity > available:
            raise OutOfStock(sku, quantity, available)
        reservation = Reservation(new_id("res"), sku, quantity, self._clock() + self.ttl)
        self._reservations[reservation.id] = reservation
        return reservation

    def release(self, reservations: Iterable[Reservation]) -> None:
        for r in reservations:
            self._reservations.pop(r.id, None)

    def commit(self, reservations: Iterable[Reservation]) -> None:
        """Turn reservations into shipped-out stock."""
        touched = set()
        for r in reservations:
            if self._reservations.pop(r.id, None) is None:
                raise KeyError(f"reservation {r.id} expired or was released")
            self._on_hand[r.sku] = self.on_hand(r.sku) - r.quantity
            touched.add(r.sku)
        for sku in sorted(touched):
            self._check_low_stock(sku)

    def restock(self, sku: str, quantity: int) -> None:
        if quantity < 1:
            raise ValueError("restock quantity must be positive")
        self._on_hand[sku] = self.on_hand(sku) + quantity

    def expire_stale(self, now: datetime | None = None) -> int:
        """Drop reservations past their expiry; returns how many were dropped."""
        now = now or self._clock()
        stale = [r.id for r in self._reservations.values() if r.expires_at <= now]
        for rid in stale:
            del self._reservations[rid]
        return len(stale)

    def _check_low_stock(self, sku: str) -> None:
        available = self.available(sku)
        if available <= self.low_stock_threshold:
            self.bus.publish(StockLow(sku, available, self.low_stock_threshold))
