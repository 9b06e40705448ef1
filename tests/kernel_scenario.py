"""A scenario host for the kernel log: an sshd whose ForceCommand runs each session in a
private mount namespace, with shims first on PATH (``dmesg``, ``journalctl``, ``lspci``),
a fresh tmpfs over /var/log, and fake OOM counters bind-mounted over /proc/vmstat and
/sys/fs/cgroup. The ``journalctl`` shim answers ``-b -1`` (the previous boot) from a
persistent journal when the scenario has one, and as journalctl does without one
otherwise. The collector cannot tell it from a real host."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import run_cli
from tests.sshd import SshServer

RESTRICTED_DMESG = (
    "#!/bin/sh\necho 'dmesg: read kernel buffer failed: Operation not permitted' >&2\nexit 1\n"
)
NO_JOURNAL = "#!/bin/sh\necho 'No journal files were found.' >&2\necho '-- No entries --'\n"
NO_PREVIOUS_BOOT = (
    "echo 'Specifying boot ID or boot offset has no effect, no persistent journal was found.' "
    ">&2\nexit 1\n"
)


@dataclass
class KernelScenario:
    """What the scenario host shows. ``dmesg``/``journal`` None: the tool fails as it does
    in a default Docker container (restricted) or a host without journald."""

    root: Path
    dmesg: str | None = None
    journal: str | None = None
    previous_journal: str | None = None
    lspci: dict[str, str] = field(default_factory=dict)
    var_log: dict[str, str] = field(default_factory=dict)
    vmstat_oom_kill: int = 0
    cgroup_oom_kill: int = 0

    def force_command(self) -> str:
        bin_dir = self.root / "bin"
        bin_dir.mkdir(parents=True)
        self._shim("dmesg", self.dmesg, RESTRICTED_DMESG)
        self._shim("journalctl", self.journal, NO_JOURNAL)
        self._previous_boot_shim()
        if self.lspci:
            self._lspci_shim()
        var_log = self.root / "var_log"
        var_log.mkdir()
        for name, text in self.var_log.items():
            (var_log / name).write_text(text)
        vmstat = re.sub(
            r"(?m)^oom_kill \d+$",
            f"oom_kill {self.vmstat_oom_kill}",
            Path("/proc/vmstat").read_text(),
        )
        (self.root / "vmstat").write_text(vmstat)
        memory = self.root / "cgroup" / "memory"
        memory.mkdir(parents=True)
        (memory / "memory.oom_control").write_text(
            f"oom_kill_disable 0\nunder_oom 0\noom_kill {self.cgroup_oom_kill}\n"
        )
        (memory / "memory.failcnt").write_text("0\n")
        (memory / "memory.limit_in_bytes").write_text("9223372036854771712\n")
        (memory / "memory.usage_in_bytes").write_text("1073741824\n")
        wrapper = self.root / "scenario.sh"
        wrapper.write_text(
            "#!/bin/sh\n"
            "exec unshare -m /bin/sh -c '\n"
            f"mount --bind {self.root}/vmstat /proc/vmstat &&\n"
            f"mount --bind {self.root}/cgroup /sys/fs/cgroup &&\n"
            "mount -t tmpfs -o size=64m forensics-scenario /var/log &&\n"
            f"cp -R {var_log}/. /var/log/ &&\n"
            f"PATH={bin_dir}:$PATH && export PATH &&\n"
            'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n'
            "'\n"
        )
        wrapper.chmod(0o755)
        return str(wrapper)

    def _previous_boot_shim(self) -> None:
        """``journalctl … -b -1 …`` answers from the previous boot's journal, or fails."""
        shim = self.root / "bin" / "journalctl"
        current = shim.read_text().split("\n", 1)[1]
        if self.previous_journal is None:
            previous = NO_PREVIOUS_BOOT
        else:
            (self.root / "previous.out").write_text(self.previous_journal)
            previous = f"exec cat {self.root}/previous.out\n"
        shim.write_text(f'#!/bin/sh\ncase " $* " in *" -b -1 "*)\n{previous};;\nesac\n{current}')

    def _lspci_shim(self) -> None:
        cases = "".join(
            f'  "{device}") echo "{words}" ;;\n' for device, words in self.lspci.items()
        )
        shim = self.root / "bin" / "lspci"
        shim.write_text(f'#!/bin/sh\ncase "$2" in\n{cases}esac\n')
        shim.chmod(0o755)

    def _shim(self, name: str, output: str | None, failing: str) -> None:
        shim = self.root / "bin" / name
        if output is None:
            shim.write_text(failing)
        else:
            (self.root / f"{name}.out").write_text(output)
            shim.write_text(f"#!/bin/sh\nexec cat {self.root}/{name}.out\n")
        shim.chmod(0o755)


def collect_json(server: SshServer, out: Path, *extra: str) -> dict[str, Any]:
    """Collect over SSH through the real CLI and return the JSON report."""
    result = run_cli(
        "collect", *server.target_args(), "--out", str(out), "--format", "json",
        "--fail-on", "never", *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def findings(report: dict[str, Any], finding_id: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["id"] == finding_id]
