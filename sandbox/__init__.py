"""sandbox package (see docs/internals.md)."""
