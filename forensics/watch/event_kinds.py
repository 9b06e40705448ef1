"""What can fire the flight recorder (``forensics arm --on``), apart from the recorder so
that ``arm --help`` can list them without loading it (docs/recorder.md, "Events")."""

from __future__ import annotations

EVENT_KINDS = ("exit", "zombie", "oom", "stuck", "memory", "new-focus")
