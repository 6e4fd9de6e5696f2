"""Settings: built-in defaults, overridden by a TOML file."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from .catalog.models import Category
from .constants import (
    DEFAULT_CURRENCY,
    DEFAULT_REGION,
    FLAT_SHIPPING_FEE,
    FREE_SHIPPING_THRESHOLD,
    LOW_STOCK_THRESHOLD,
)
from .utils import parse_money

CONFIG_ENV_VAR = "ACME_SHOP_CONFIG"
DEFAULT_CONFIG_PATH = Path("config/shop.toml")


class ConfigError(ValueError):
    """The settings file is missing, unreadable or holds a bad value."""


@dataclass
class Settings:
    currency: str = DEFAULT_CURRENCY
    default_region: str = DEFAULT_REGION
    catalog_path: Path = Path("data/catalog.json")
    orders_path: Path = Path("var/orders.json")
    tax_rates: dict[str, Decimal] = field(default_factory=dict)
    tax_exempt: frozenset[Category] = frozenset({Category.GIFT_CARD})
    free_shipping_threshold: Decimal = FREE_SHIPPING_THRESHOLD
    flat_shipping_fee: Decimal = FLAT_SHIPPING_FEE
    low_stock_threshold: int = LOW_STOCK_THRESHOLD
    payment_limit: Decimal = Decimal("2000.00")
    ops_email: str = "ops@acme.example"
    coupons: dict[str, dict] = field(default_factory=dict)


def resolve_config_path(path: str | os.PathLike | None = None) -> Path:
    """The file to read: an explicit path, else $ACME_SHOP_CONFIG, else config/shop.toml."""
    if path:
        return Path(path)
    env = os.environ.get(CONFIG_ENV_VAR)
    return Path(env) if env else DEFAULT_CONFIG_PATH


def load_settings(path: str | os.PathLike | None = None) -> Settings:
    """Read the settings file and apply it over the defaults."""
    config_path = resolve_config_path(path)
    try:
        with open(config_path, "rb") as f:
            raw = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"{config_path}: settings file not found") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{config_path}: {e}") from None
    return settings_from_dict(raw, base_dir=config_path.parent.parent)


def settings_from_dict(raw: dict, base_dir: Path = Path(".")) -> Settings:
    """Apply a parsed settings document over the defaults.

    Relative paths in the ``[storage]`` table are resolved against ``base_dir``.
    """
    s = Settings()
    shop = raw.get("shop", {})
    s.currency = shop.get("currency", s.currency)
    s.default_region = shop.get("default_region", s.default_region)

    storage = raw.get("storage", {})
    s.catalog_path = base_dir / storage.get("catalog", s.catalog_path)
    s.orders_path = base_dir / storage.get("orders", s.orders_path)

    tax = raw.get("tax", {})
    s.tax_rates = {region.upper(): _rate(region, value) for region, value in tax.get("rates", {}).items()}
    if "exempt_categories" in tax:
        s.tax_exempt = frozenset(Category.parse(c) for c in tax["exempt_categories"])

    shipping = raw.get("shipping", {})
    if "free_over" in shipping:
        s.free_shipping_threshold = parse_money(shipping["free_over"])
    if "flat_fee" in shipping:
        s.flat_shipping_fee = parse_money(shipping["flat_fee"])

    inventory = raw.get("inventory", {})
    s.low_stock_threshold = int(inventory.get("low_stock_threshold", s.low_stock_threshold))

    payments = raw.get("payments", {})
    if "limit" in payments:
        s.payment_limit = parse_money(payments["limit"])

    s.ops_email = raw.get("notifications", {}).get("ops_email", s.ops_email)
    s.coupons = {code.upper(): spec for code, spec in raw.get("coupons", {}).items()}
    return s


def _rate(region: str, value) -> Decimal:
    rate = Decimal(str(value))
    if not 0 <= rate < 1:
        raise ConfigError(f"tax.rates.{region}: a rate is a fraction between 0 and 1, got {value}")
    return rate
