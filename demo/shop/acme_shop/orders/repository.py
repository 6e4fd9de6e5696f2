"""Storage for orders: in memory, or in a JSON file that survives restarts."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..utils import new_id
from .models import Order


class OrderNotFound(KeyError):
    def __init__(self, order_id: str) -> None:
        super().__init__(order_id)
        self.order_id = order_id

    def __str__(self) -> str:
        return f"no order {self.order_id!r}"


class OrderRepository:
    """Keeps orders in memory. Subclasses add persistence."""

    def __init__(self) -> None:
        self._orders: dict[str, Order] = {}

    def next_id(self) -> str:
        return new_id("ord")

    def save(self, order: Order) -> None:
        self._orders[order.id] = order

    def get(self, order_id: str) -> Order:
        try:
            return self._orders[order_id]
        except KeyError:
            raise OrderNotFound(order_id) from None

    def list_for_customer(self, customer_id: str) -> list[Order]:
        return sorted(
            (o for o in self._orders.values() if o.customer_id == customer_id),
            key=lambda o: o.created_at,
        )

    def __len__(self) -> int:
        return len(self._orders)


class JsonOrderRepository(OrderRepository):
    """Orders persisted to one JSON file, rewritten atomically on every save."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)
        if self.path.exists():
            with open(self.path, encoding="utf-8") as f:
                for entry in json.load(f)["orders"]:
                    order = Order.from_dict(entry)
                    self._orders[order.id] = order

    def next_id(self) -> str:
        # The id counter restarts with the process; skip ids already on disk.
        taken = {o.id for o in self._orders.values()}
        candidate = super().next_id()
        while candidate in taken:
            candidate = super().next_id()
        return candidate

    def save(self, order: Order) -> None:
        super().save(order)
        self._flush()

    def _flush(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        data = {"orders": [o.to_dict() for o in sorted(self._orders.values(), key=lambda o: o.id)]}
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
        os.replace(tmp, self.path)
