"""Application services: each wraps one business capability."""
