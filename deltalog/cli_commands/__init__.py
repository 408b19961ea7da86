"""The ``deltalog`` subcommands for tables: inspection (``describe``, ``history``, ``files``)
and maintenance (``checkpoint``, ``cleanup``, ``vacuum``, ``optimize``, ``restore``).

They register themselves with :func:`deltalog.cli.command` when imported; ``deltalog.cli``
imports them through ``COMMAND_MODULES``.
"""
