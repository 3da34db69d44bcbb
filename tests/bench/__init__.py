"""Mechanism checks of the benches under bench/ (their figures are printed, never asserted)."""
