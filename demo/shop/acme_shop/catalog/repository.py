"""Storage for catalog products."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Iterator

from .models import Category, Product


class ProductNotFound(KeyError):
    """Raised when a SKU is not in the catalog."""

    def __init__(self, sku: str) -> None:
        super().__init__(sku)
        self.sku = sku

    def __str__(self) -> str:
        return f"no product with SKU {self.sku!r}"


class ProductRepository:
    """An in-memory product catalog, optionally loaded from a JSON file."""

    def __init__(self, products: Iterable[Product] = ()) -> None:
        self._by_sku: dict[str, Product] = {}
        for product in products:
            self.add(product)

    def add(self, product: Product) -> None:
        if product.sku in self._by_sku:
            raise ValueError(f"duplicate SKU {product.sku!r}")
        self._by_sku[product.sku] = product

    def get(self, sku: str) -> Product:
        try:
            return self._by_sku[sku]
        except KeyError:
            raise ProductNotFound(sku) from None

    def find(self, category: Category | None = None, active_only: bool = True) -> list[Product]:
        """Products sorted by SKU, optionally filtered by category."""
        return [
            p
            for p in sorted(self._by_sku.values(), key=lambda p: p.sku)
            if (category is None or p.category is category) and (p.active or not active_only)
        ]

    def __contains__(self, sku: object) -> bool:
        return sku in self._by_sku

    def __iter__(self) -> Iterator[Product]:
        return iter(self._by_sku.values())

    def __len__(self) -> int:
        return len(self._by_sku)

    @classmethod
    def from_json(cls, path: Path) -> tuple["ProductRepository", dict[str, int]]:
        """Load products and their opening stock from a catalog file.

        Returns the repository and a mapping of SKU to units on hand.
        """
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
        products = [Product.from_dict(entry) for entry in raw["products"]]
        stock = {entry["sku"]: int(entry.get("stock", 0)) for entry in raw["products"]}
        return cls(products), stock
