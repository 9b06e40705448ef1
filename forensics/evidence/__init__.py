"""Evidence that leaves the machine: redacted packs of a bundle, and their verification."""
