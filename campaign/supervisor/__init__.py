"""The supervisor: resolved session specs, their order, one attempt, the fan-out and budgets."""
