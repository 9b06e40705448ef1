"""The exit statuses of every command (documented in the README and ``forensics --help``):
0 collected, nothing at or above ``--fail-on``; 1 collected with such a finding;
2 usage or configuration error; 3 could not collect.

A module of its own so that a command that must start fast (``lint-script``) can use
them without importing the models.
"""

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_NOT_COLLECTED = 3
EXIT_INTERNAL = 70
