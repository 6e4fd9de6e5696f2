"""Catalog entities: products and their categories."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from enum import Enum

from ..constants import MAX_LINE_QUANTITY


class Category(str, Enum):
    """The department a product is sold in; tax and discounts key off it."""

    GROCERY = "grocery"
    BOOKS = "books"
    ELECTRONICS = "electronics"
    CLOTHING = "clothing"
    GIFT_CARD = "gift_card"

    @classmethod
    def parse(cls, value: str) -> "Category":
        try:
            return cls(value.lower())
        except ValueError:
            allowed = ", ".join(c.value for c in cls)
            raise ValueError(f"unknown category {value!r}; expected one of {allowed}") from None


@dataclass(frozen=True)
class Product:
    """A product that can be put in a cart.

    ``max_per_order`` lets a product be limited below the shop-wide limit,
    e.g. for graphics cards during a launch.
    """

    sku: str
    name: str
    unit_price: Decimal
    category: Category
    weight_grams: int = 0
    active: bool = True
    max_per_order: int = MAX_LINE_QUANTITY
    tags: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not self.sku or not self.sku.isupper():
            raise ValueError(f"SKU must be non-empty upper case: {self.sku!r}")
        if self.unit_price <= 0:
            raise ValueError(f"{self.sku}: unit price must be positive")
        if not 1 <= self.max_per_order <= MAX_LINE_QUANTITY:
            raise ValueError(
                f"{self.sku}: max_per_order must be between 1 and {MAX_LINE_QUANTITY}"
            )

    @property
    def is_digital(self) -> bool:
        """Digital goods ship for free and have no weight."""
        return self.category is Category.GIFT_CARD

    @classmethod
    def from_dict(cls, data: dict) -> "Product":
        """Build a product from one entry of the catalog JSON file."""
        return cls(
            sku=data["sku"],
            name=data["name"],
            unit_price=Decimal(str(data["unit_price"])),
            category=Category.parse(data["category"]),
            weight_grams=int(data.get("weight_grams", 0)),
            active=bool(data.get("active", True)),
            max_per_order=int(data.get("max_per_order", MAX_LINE_QUANTITY)),
            tags=tuple(data.get("tags", ())),
        )

    def to_dict(self) -> dict:
        return {
            "sku": self.sku,
            "name": self.name,
            "unit_price": str(self.unit_price),
            "category": self.category.value,
            "weight_grams": self.weight_grams,
            "active": self.active,
            "max_per_order": self.max_per_order,
            "tags": list(self.tags),
        }
