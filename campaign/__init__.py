"""campaign package (see docs/internals.md)."""
