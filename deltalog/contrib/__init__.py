"""Integrations with outside engines and services (PySpark, Redis, pytest)."""
