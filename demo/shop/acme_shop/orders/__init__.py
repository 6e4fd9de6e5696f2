"""Carts, orders and order storage."""

from .models import Cart, CartLine, Order, OrderStatus
from .repository import JsonOrderRepository, OrderNotFound, OrderRepository

__all__ = [
    "Cart",
    "CartLine",
    "JsonOrderRepository",
    "Order",
    "OrderNotFound",
    "OrderRepository",
    "OrderStatus",
]
