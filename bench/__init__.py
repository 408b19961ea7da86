"""Side-by-side benchmarks of deltalog against delta-rs (``python -m bench.<name>``)."""
