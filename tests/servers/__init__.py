"""Real servers for the tests, each started on 127.0.0.1 on a free port in its own
process and always stopped afterwards (see process.py)."""
