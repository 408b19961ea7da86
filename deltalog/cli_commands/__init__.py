"""The ``deltalog`` subcommands: table inspection (``describe``, ``history``, ``files``),
maintenance (``checkpoint``, ``cleanup``, ``vacuum``, ``optimize``, ``restore``, ``clone``,
``convert``), and the
storage backends (``stores``, ``conformance``).

They register themselves with :func:`deltalog.cli.command` when imported; ``deltalog.cli``
imports them through ``COMMAND_MODULES``.
"""
