"""forensics: remote forensic diagnostics for GPU hosts."""

__version__ = "0.1.0"
