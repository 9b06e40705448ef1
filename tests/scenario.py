"""Scenario hosts: an sshd whose ForceCommand runs the session with shims first on PATH
(and optionally other wrappers), so the tool sees a host that behaves as the test wants."""

from __future__ import annotations

import stat
from pathlib import Path


def write_executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def shim_wrapper(root: Path, shims: dict[str, str], before: str = "") -> str:
    """Write shims (name -> sh script body) and a ForceCommand wrapper; return the command.

    ``before`` is shell text run in the wrapper before the session's command.
    """
    shim_dir = root / "shims"
    for name, body in shims.items():
        write_executable(shim_dir / name, "#!/bin/sh\n" + body + "\n")
    wrapper = write_executable(
        root / "wrapper.sh",
        "#!/bin/sh\n"
        f"PATH='{shim_dir}':$PATH; export PATH\n"
        f"{before}\n"
        'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n',
    )
    return f"/bin/sh {wrapper}"
