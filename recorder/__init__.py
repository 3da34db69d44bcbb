"""recorder package (see docs/internals.md)."""
