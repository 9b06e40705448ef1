"""The shell that runs on the host: every probe's section and the script around them pass
``shellcheck -s sh`` exactly as they are sent (preamble and ``.sh`` file together)."""

from __future__ import annotations

import json
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from forensics.core.models import CollectOptions
from forensics.probes import PROBES
from forensics.remote.host_script import compose
from forensics.shell.shellcheck import locate_shellcheck
from forensics.watch.recorder_host import loop_script

EVERYTHING = CollectOptions(
    focus="cuzk|lotus-worker",
    logs=("/var/log/cuzk*.log", "~/bench.log"),
    expected_logs=("/var/log/supervisor/cuzk.log",),
    scripts=("/opt/run.sh", "bench.sh"),
    snapshot_gap=2.5,
)
PROBE_DIR = Path(str(resources.files("forensics.probes")))
REMOTE_DIR = Path(str(resources.files("forensics.remote")))


def shellcheck(text: str) -> list[str]:
    binary = locate_shellcheck()
    if binary in (None, "none"):
        pytest.skip("ShellCheck is not installed")
    assert binary is not None
    completed = subprocess.run(
        [binary, "--norc", "-s", "sh", "-x", f"--source-path={REMOTE_DIR}", "-f", "json1", "-"],
        input=text.encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    comments = json.loads(completed.stdout)["comments"]
    return [f"{c['line']}: SC{c['code']} {c['message']}" for c in comments]


@pytest.mark.parametrize("options", [CollectOptions(), EVERYTHING], ids=["plain", "everything"])
@pytest.mark.parametrize("probe", PROBES, ids=[probe.name for probe in PROBES])
def test_each_probe_section_is_shellcheck_clean(probe: object, options: CollectOptions) -> None:
    for spec in probe.sections(options):  # type: ignore[attr-defined]
        assert shellcheck(spec.shell) == [], spec.name


def test_the_host_script_and_the_focus_function_are_shellcheck_clean() -> None:
    script = compose([], focus="cuzk")
    assert shellcheck(script.text) == []
    assert shellcheck((REMOTE_DIR / "focus.sh").read_text()) == []


def test_the_flight_recorder_loop_is_shellcheck_clean() -> None:
    assert shellcheck(loop_script("0123abcd", "cuzk")) == []
    assert shellcheck(loop_script("0123abcd", None)) == []


def test_every_probe_has_its_shell_beside_its_module() -> None:
    # A probe whose section the client writes (the flight recorder's) runs no shell; one
    # with a second section, or shared functions, has parts named for it
    # (processes.again.sh, processes.dump.sh).
    names = {probe.name for probe in PROBES if not probe.client_sections}
    stems = {path.stem for path in PROBE_DIR.glob("*.sh")}
    assert names <= stems
    owned = {stem for stem in stems if stem.partition(".")[0] in names}
    assert stems == owned, sorted(stems - owned)
