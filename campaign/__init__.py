"""campaign package (see docs/internals.md)."""
__version__ = "0.1.0"
