"""acme_shop: a small order-processing service for the ACME online shop.

The package is organised by concern:

- ``acme_shop.catalog``: products and the product repository;
- ``acme_shop.orders``: carts, orders and the order repository;
- ``acme_shop.services``: checkout, pricing, discounts, tax, inventory,
  payments and notifications;
- ``acme_shop.cli``: the ``acme-shop`` command.
"""

__version__ = "1.4.2"
