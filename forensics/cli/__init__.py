"""The ``forensics`` command line: one module per command, shared options, exit codes."""
