"""The report: arms side by side per probe, from batches; it describes and grades nothing."""
