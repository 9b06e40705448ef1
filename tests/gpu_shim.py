"""A GPU host the machine cannot be: an ``nvidia-smi`` (and ``dmesg``) shim first on PATH
that answers from a directory of ``tests/samples/nvidia-smi``, and the ForceCommand
wrapper that puts it there for every SSH session of a scenario host."""

from __future__ import annotations

import os
from pathlib import Path

SAMPLES = Path(__file__).parent / "samples" / "nvidia-smi"

_NVIDIA_SMI = """\
#!/bin/sh
dir=@DIR@
if [ -e "$dir/hang" ]; then exec sleep 100000; fi
case "$*" in
  *--query-compute-apps=*) q=apps ;;
  *clocks_throttle_reasons*) q=throttle ;;
  *remapped_rows*) q=memory_health ;;
  *--query-gpu=*) q=gpus ;;
  *) echo "shim: unexpected arguments: $*" >&2; exit 2 ;;
esac
if [ -f "$dir/$q.csv" ]; then cat "$dir/$q.csv"; fi
status=0
if [ -f "$dir/$q.exit" ]; then read -r status <"$dir/$q.exit"; fi
exit "$status"
"""

_DMESG = """\
#!/bin/sh
cat @FILE@
"""

_WRAPPER = """\
#!/bin/sh
PATH=@SHIMS@:$PATH; export PATH
exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"
"""


def shim_directory(root: Path, scenario: str, samples: Path = SAMPLES) -> Path:
    """A directory holding the shims for one sample scenario (``healthy``, ``lost``, ...),
    from ``samples`` (the repository's, or a test's own)."""
    sample = samples / scenario
    shims = root / f"shims-{scenario}"
    shims.mkdir(parents=True, exist_ok=True)
    _executable(shims / "nvidia-smi", _NVIDIA_SMI.replace("@DIR@", _quote(str(sample))))
    if (sample / "dmesg.txt").exists():
        _executable(shims / "dmesg", _DMESG.replace("@FILE@", _quote(str(sample / "dmesg.txt"))))
    return shims


def force_command(root: Path, shims: Path) -> str:
    """A ForceCommand that runs every session with ``shims`` first on PATH."""
    wrapper = root / f"wrapper-{shims.name}.sh"
    _executable(wrapper, _WRAPPER.replace("@SHIMS@", _quote(str(shims))))
    return str(wrapper)


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    os.chmod(path, 0o755)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"
