"""A tiny in-process event bus used to decouple checkout from its side effects."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import Callable

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Event:
    """Base class of every event; handlers subscribed to it receive all events."""

    @property
    def name(self) -> str:
        return type(self).__name__


@dataclass(frozen=True)
class OrderPlaced(Event):
    order_id: str
    customer_id: str
    total: Decimal
    currency: str


@dataclass(frozen=True)
class OrderCancelled(Event):
    order_id: str
    customer_id: str
    reason: str


@dataclass(frozen=True)
class StockLow(Event):
    sku: str
    available: int
    threshold: int


Handler = Callable[[Event], None]


class EventBus:
    """Synchronous publish/subscribe.

    Handlers run in subscription order. A failing handler is logged and does
    not stop the others, nor the code that published the event.
    """

    def __init__(self) -> None:
        self._handlers: dict[type[Event], list[Handler]] = defaultdict(list)
        self.published: list[Event] = []

    def subscribe(self, event_type: type[Event], handler: Handler) -> None:
        self._handlers[event_type].append(handler)

    def publish(self, event: Event) -> int:
        """Deliver an event to the handlers of its type and of its base types.

        Returns the number of handlers that ran without raising.
        """
        self.published.append(event)
        delivered = 0
        for event_type in type(event).__mro__:
            for handler in self._handlers.get(event_type, ()):
                try:
                    handler(event)
                except Exception:
                    log.exception("handler %r failed on %s", handler, event.name)
                else:
                    delivered += 1
        return delivered
