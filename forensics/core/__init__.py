"""The core every job shares: models, errors, the probe contract, units, redaction, focus."""
