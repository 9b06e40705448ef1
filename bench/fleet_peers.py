"""The methods the fleet bench compares, each as the command line of one client process
(so that its CPU is that process tree's own) and a check that it brought back every
host's full output.

forensics runs `forensics sweep` (and, on a fleet of one, `forensics collect` as
`forensics-collect`); every peer runs forensics' recorded host script (one
`compose` of the default sections, the same nonce for all hosts), each host with its own
TMPDIR under the run's directory, since the loopback hosts share /tmp and the same nonce
in PID namespaces that all start at 1 would name the same private directory.

OpenSSH (and ansible, which drives it) is pinned to what paramiko negotiates with these
sshd hosts (curve25519-sha256, aes128-ctr, hmac-sha2-256): left alone, OpenSSH 9 picks
sntrup761x25519, which costs more CPU per connection; `openssh-default` shows that.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from forensics.remote.host_script import Script, decode
from tests.fleet import Fleet

USER = os.environ.get("USER", "root")
BENCH = Path(__file__).resolve().parent
PINNED = (
    "-o", "KexAlgorithms=curve25519-sha256@libssh.org",
    "-o", "Ciphers=aes128-ctr",
    "-o", "MACs=hmac-sha2-256",
)  # fmt: skip


@dataclass(frozen=True)
class Job:
    """One run of one method over the chosen hosts. ``ports``: the port the client dials
    for each host (its sshd's, or its latency forwarder's)."""

    fleet: Fleet
    names: tuple[str, ...]
    ports: dict[str, int]
    script: Script
    directory: Path

    @property
    def out(self) -> Path:
        return self.directory / "out"

    def tmpdir(self, name: str) -> Path:
        return self.directory / "tmp" / name

    def prepare(self) -> None:
        self.out.mkdir(parents=True)
        for name in self.names:
            self.tmpdir(name).mkdir(parents=True)

    def exec_command(self, tmpdir: str) -> str:
        """The script as one exec command, as forensics sends it, with this TMPDIR."""
        encoded = base64.b64encode(self.script.text.encode()).decode()
        return f"echo {encoded}|base64 -d|TMPDIR={tmpdir} /bin/sh"

    def ssh_options(self, pinned: bool = True) -> list[str]:
        return [
            "-F", str(self.fleet.root / "ssh_config"), "-i", str(self.fleet.client_key),
            "-o", "IdentitiesOnly=yes", "-o", f"UserKnownHostsFile={self.fleet.known_hosts}",
            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
            "-o", "ControlMaster=no", *(PINNED if pinned else ()),
        ]  # fmt: skip

    def job_file(self) -> Path:
        """The job for bench/paramiko_pool.py and bench/pssh_pool.py."""
        path = self.directory / "job.json"
        document = {
            "user": USER,
            "identity": str(self.fleet.client_key),
            "known_hosts": str(self.fleet.known_hosts),
            "parallel": len(self.names),
            "out": str(self.out),
            "hosts": [
                {
                    "name": name,
                    "port": self.ports[name],
                    "command": self.exec_command(str(self.tmpdir(name))),
                }
                for name in self.names
            ],
        }
        path.write_text(json.dumps(document))
        return path

    def problems_in_outputs(self, outputs: dict[str, bytes]) -> list[str]:
        """What is missing from each host's stdout: the script's frames say what it wrote."""
        problems = []
        for name in self.names:
            decoded = decode(self.script, outputs.get(name, b""))
            unfinished = [
                section
                for section, output in decoded.outputs.items()
                if not output.result.finished or output.result.truncated
            ]
            if decoded.garbled or decoded.fatal or unfinished:
                problems.append(f"{name}: garbled={decoded.garbled} unfinished={unfinished}")
        return problems

    def problems_in_files(self) -> list[str]:
        outputs = {path.name: path.read_bytes() for path in self.out.iterdir()}
        return self.problems_in_outputs(outputs)


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    stdin: bytes = b""
    env: dict[str, str] | None = None


@dataclass(frozen=True)
class Method:
    name: str
    launch: Callable[[Job], Launch]
    # Given the job and the process's stdout: every host whose output is not complete.
    problems: Callable[[Job, bytes], list[str]]
    one_host: bool = False  # only runs on a fleet of one host


def _sweep(job: Job) -> Launch:
    inventory = job.fleet.write_inventory(job.directory / "inventory.yaml", job.names)
    document = json.loads(inventory.read_text())
    for host in document["hosts"]:
        host["port"] = job.ports[host["name"]]
    inventory.write_text(json.dumps(document))
    return Launch(
        [sys.executable, "-m", "forensics", "sweep", "--inventory", str(inventory),
         "--out", str(job.out), "--concurrency", str(len(job.names)), "--format", "json",
         "--fail-on", "never"],
    )  # fmt: skip


def _sweep_problems(job: Job, stdout: bytes) -> list[str]:
    problems = []
    hosts = {host["name"]: host for host in json.loads(stdout)["hosts"]}
    for name in job.names:
        host = hosts.get(name)
        if host is None or host["status"] != "ok":
            problems.append(f"{name}: {host and host['status']} {host and host['reason']}")
        else:
            problems += _bundle_problems(name, Path(host["bundle"]))
    return problems


def _bundle_problems(name: str, bundle: Path) -> list[str]:
    manifest = json.loads((bundle / "manifest.json").read_text())
    unfinished = [
        section["name"]
        for section in manifest["sections"]
        if not section["finished"] or section["truncated"]
    ]
    return [f"{name}: unfinished={unfinished}"] if unfinished else []


def _collect(job: Job) -> Launch:
    (name,) = job.names
    fleet = job.fleet
    return Launch(
        [sys.executable, "-m", "forensics", "collect", f"{USER}@127.0.0.1:{job.ports[name]}",
         "--identity", str(fleet.client_key), "--known-hosts", str(fleet.known_hosts),
         "--ssh-config", str(fleet.root / "ssh_config"), "--out", str(job.out),
         "--format", "json", "--fail-on", "never"],
    )  # fmt: skip


def _collect_problems(job: Job, stdout: bytes) -> list[str]:
    (name,) = job.names
    bundles = list(job.out.glob("*/*/manifest.json"))
    if len(bundles) != 1:
        return [f"{name}: {len(bundles)} bundles"]
    return _bundle_problems(name, bundles[0].parent)


def _pool(program: str) -> Callable[[Job], Launch]:
    return lambda job: Launch([sys.executable, str(BENCH / program), str(job.job_file())])


def _xargs_ssh(pinned: bool) -> Callable[[Job], Launch]:
    def launch(job: Job) -> Launch:
        ssh = shlex.join(["ssh", *job.ssh_options(pinned)])
        tmp = shlex.quote(str(job.directory / "tmp"))
        one = (
            f'exec {ssh} -p "$2" {USER}@127.0.0.1 "TMPDIR={tmp}/$1 /bin/sh -s" '
            f'<{shlex.quote(str(job.directory / "script.sh"))} >{shlex.quote(str(job.out))}/"$1"'
        )
        (job.directory / "script.sh").write_text(job.script.text)
        lines = "".join(f"{name} {job.ports[name]}\n" for name in job.names)
        return Launch(
            ["xargs", "-P", str(len(job.names)), "-L", "1", "sh", "-c", one, "sh"],
            stdin=lines.encode(),
        )

    return launch


def _ansible(job: Job) -> Launch:
    inventory = job.directory / "inventory.ini"
    inventory.write_text(
        "[fleet]\n"
        + "".join(f"{name} ansible_host=127.0.0.1 ansible_port={job.ports[name]}\n"
                  for name in job.names)
    )  # fmt: skip
    home = job.directory / "ansible"
    env = {
        **os.environ,
        "ANSIBLE_HOME": str(home),
        "ANSIBLE_LOCAL_TEMP": str(home / "tmp"),
        "ANSIBLE_REMOTE_USER": USER,
        "ANSIBLE_PRIVATE_KEY_FILE": str(job.fleet.client_key),
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        # No -C, no ControlPersist (one command a host): the same ssh as the OpenSSH row.
        "ANSIBLE_SSH_ARGS": "-o ControlMaster=no",
        "ANSIBLE_SSH_COMMON_ARGS": shlex.join(job.ssh_options()),
        # raw asks for a tty by default, which turns \n into \r\n.
        "ANSIBLE_SSH_USETTY": "False",
        # Each host's result as JSON in OUT/NAME (the stdout callback stays the default).
        "ANSIBLE_CALLBACKS_ENABLED": "ansible.builtin.tree",
        "ANSIBLE_CALLBACK_TREE_DIR": str(job.out),
        "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
        "ANSIBLE_NOCOLOR": "1",
    }
    command = job.exec_command(f"{job.directory / 'tmp'}/{{{{ inventory_hostname }}}}")
    return Launch(
        ["ansible", "fleet", "-i", str(inventory), "-m", "raw", "-a", command,
         "-f", str(len(job.names))],
        env=env,
    )  # fmt: skip


def _ansible_problems(job: Job, stdout: bytes) -> list[str]:
    outputs = {
        path.name: str(json.loads(path.read_text()).get("stdout", "")).encode(
            "utf-8", "surrogateescape"
        )
        for path in job.out.iterdir()
    }
    return job.problems_in_outputs(outputs)


def _files(job: Job, stdout: bytes) -> list[str]:
    return job.problems_in_files()


METHODS = {
    method.name: method
    for method in (
        Method("forensics", _sweep, _sweep_problems),
        Method("forensics-collect", _collect, _collect_problems, one_host=True),
        Method("paramiko-pool", _pool("paramiko_pool.py"), _files),
        Method("openssh", _xargs_ssh(pinned=True), _files),
        Method("openssh-default", _xargs_ssh(pinned=False), _files),
        Method("ansible-raw", _ansible, _ansible_problems),
        Method("parallel-ssh", _pool("pssh_pool.py"), _files),
    )
}
