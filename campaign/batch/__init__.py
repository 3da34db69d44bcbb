"""The batch directory: its layout, lock, typed ledger, options, config, fold and transcripts."""
