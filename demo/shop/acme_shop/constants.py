"""Shop-wide constants shared by the catalog, orders, inventory and pricing code."""

from decimal import Decimal

DEFAULT_CURRENCY = "EUR"
DEFAULT_REGION = "DE"

#: Smallest unit of money we invoice in.
MONEY_QUANTUM = Decimal("0.01")

#: The most units of one product a single order line may hold.
MAX_LINE_QUANTITY = 20

#: Stock level at or below which operations are alerted.
LOW_STOCK_THRESHOLD = 5

#: How long an unpaid reservation holds stock.
RESERVATION_TTL_SECONDS = 15 * 60

FREE_SHIPPING_THRESHOLD = Decimal("50.00")
FLAT_SHIPPING_FEE = Decimal("4.90")
