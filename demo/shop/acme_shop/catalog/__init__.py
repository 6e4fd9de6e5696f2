"""The product catalog."""

from .models import Category, Product
from .repository import ProductNotFound, ProductRepository

__all__ = ["Category", "Product", "ProductNotFound", "ProductRepository"]
