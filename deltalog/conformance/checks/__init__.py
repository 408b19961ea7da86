"""The conformance checks, one module per property of the LogStore contract.

The order of the report is :data:`deltalog.conformance.catalog.CHECKS`.
"""
