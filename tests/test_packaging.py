"""What ``pip install .`` puts into site-packages: one package, ``forensics``, with the
probes and the report templates inside it (the repository keeps them at its top level)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_the_wheel_installs_one_top_level_package_with_probes_and_templates(
    tmp_path: Path,
) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT), "-w", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("forensics-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"forensics"}
    probes = {Path(n).name for n in names if n.startswith("forensics/probes/")}
    assert {p.name for p in (ROOT / "probes").glob("*.py")} <= probes
    assert {p.name for p in (ROOT / "probes").glob("*.sh")} <= probes  # the host shell
    assert {"forensics/remote/host_script.sh", "forensics/remote/focus.sh"} <= set(names)
    templates = {n for n in names if n.startswith("forensics/reports/templates/")}
    assert "forensics/reports/templates/host.html.j2" in templates
