"""The pieces of the ccsync benchmark driver (bench/harness.py)."""
