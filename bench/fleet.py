"""Benchmark: `forensics sweep` beside its peers over the same N loopback sshd hosts, at a
given round-trip time, A/B/A/B (each round runs every method once, in turn).

    python bench/fleet.py --hosts 1 16 --rtt-ms 0 50 --rounds 3
    python bench/fleet.py --hosts 64 --rtt-ms 0 50 --rounds 2
    python bench/fleet.py --hosts 64 --profile sweep-64.txt    # one sweep under py-spy

Hosts: bench/loopback_fleet.py (one sshd each, in its own PID/UTS/mount namespace); RTT:
bench/latency_forwarder.py in front of each host; peers: bench/fleet_peers.py, which says
how each is run. Every run is checked to have brought back every host's full output.
Prints, per method, wall time (median, min, max), the client's CPU (user+system of its
whole process tree, median) and forensics' figure divided by the method's (above 1.00:
forensics took more). Loopback hosts share the client's cores: with many hosts the
host-side work competes with the client, so client CPU is what separates the tools there.
"""

from __future__ import annotations

import argparse
import compileall
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import latency_forwarder  # noqa: E402
from bench.fleet_peers import METHODS, Job, Method  # noqa: E402
from bench.loopback_fleet import loopback_fleet, trust_ports  # noqa: E402
from bench.profile_summary import summarize  # noqa: E402
from forensics.core.models import CollectOptions  # noqa: E402
from forensics.probes import PROBES  # noqa: E402
from forensics.remote.host_script import Script, compose  # noqa: E402
from tests.fleet import Fleet  # noqa: E402

RUN_TIMEOUT_S = 600
PROFILE_RATE = 250


@dataclass
class Figures:
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    stdout_bytes: list[int] = field(default_factory=list)


def run_once(method: Method, job: Job, prefix: tuple[str, ...] = ()) -> Figures:
    """One run of ``method``: its wall time, its process tree's CPU, what it missed."""
    job.prepare()
    launch = method.launch(job)
    stdout_path = job.directory / "stdout"
    with stdout_path.open("wb") as stdout, (job.directory / "stderr").open("wb") as stderr:
        began = time.monotonic()
        process = subprocess.Popen(
            [*prefix, *launch.argv], stdin=subprocess.PIPE, stdout=stdout, stderr=stderr,
            env=launch.env, cwd=REPO, start_new_session=True,
        )  # fmt: skip
        killer = threading.Timer(RUN_TIMEOUT_S, os.killpg, (process.pid, signal.SIGKILL))
        killer.start()
        assert process.stdin is not None
        process.stdin.write(launch.stdin)
        process.stdin.close()
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - began
        killer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
    figures = Figures([wall], [usage.ru_utime + usage.ru_stime])
    output = stdout_path.read_bytes()
    figures.stdout_bytes.append(len(output))
    if process.returncode != 0:
        tail = (job.directory / "stderr").read_text(errors="replace")[-300:]
        figures.problems.append(f"exit {process.returncode}: {tail}")
    else:
        try:
            figures.problems.extend(method.problems(job, output))
        except (ValueError, KeyError, IndexError, OSError) as error:
            figures.problems.append(f"unreadable output: {error!r}")
    return figures


def table(hosts: int, rtt_ms: float, results: dict[str, Figures]) -> str:
    base = results.get("forensics")
    lines = [
        f"N={hosts} RTT={rtt_ms:g} ms, {len(next(iter(results.values())).walls)} rounds:",
        "",
        "| method | all output | wall median | min | max | client CPU | "
        "forensics / it: wall | CPU |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, figures in results.items():
        wall = statistics.median(figures.walls)
        cpu = statistics.median(figures.cpus)
        ratio_wall = f"{statistics.median(base.walls) / wall:.2f}x" if base else "-"
        ratio_cpu = f"{statistics.median(base.cpus) / cpu:.2f}x" if base else "-"
        complete = "yes" if not figures.problems else f"NO ({len(figures.problems)})"
        lines.append(
            f"| {name} | {complete} | {wall:.2f} s | {min(figures.walls):.2f} | "
            f"{max(figures.walls):.2f} | {cpu:.2f} s | {ratio_wall} | {ratio_cpu} |"
        )
    return "\n".join(lines)


def byte_compile() -> None:
    """Byte-compile forensics as pip does when it installs it: where PYTHONDONTWRITEBYTECODE
    is set (these machines set it), a worktree's modules are otherwise compiled from source
    on every run, ~0.8 s of CPU that an installed forensics never pays."""
    for package in ("forensics", "probes", "reports"):  # the last two: forensics' symlinks
        compileall.compile_dir(REPO / package, quiet=1)


def machine() -> str:
    model = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")), "?",
    )  # fmt: skip
    memory = int(Path("/proc/meminfo").read_text().split()[1]) // (1024 * 1024)
    openssh = subprocess.run(["ssh", "-V"], capture_output=True, text=True).stderr.strip()
    return (
        f"{os.cpu_count()} x {model}, {memory} GiB, Linux {platform.release()}, "
        f"Python {platform.python_version()}, {openssh}"
    )


def load() -> str:
    return "load average " + " ".join(f"{value:.1f}" for value in os.getloadavg())


def kernel_log_bytes() -> int:
    """The shared kernel log every host's kernel_log section reads (dmesg: not namespaced)."""
    return len(subprocess.run(["dmesg"], capture_output=True, check=False).stdout)


class Bench:
    def __init__(self, made: Fleet, script: Script, root: Path) -> None:
        self.made = made
        self.script = script
        self.root = root
        self.runs = 0

    def job(self, names: tuple[str, ...], ports: dict[str, int]) -> Job:
        self.runs += 1
        directory = self.root / f"run-{self.runs:04d}"
        return Job(self.made, names, ports, self.script, directory)

    def compare(
        self, hosts: int, rtt_ms: float, ports: dict[str, int], methods: list[str], rounds: int
    ) -> dict[str, Figures]:
        names = tuple(host.name for host in self.made.hosts[:hosts])
        methods = [name for name in methods if hosts == 1 or not METHODS[name].one_host]
        results = {name: Figures() for name in methods}
        for _ in range(rounds):
            for name in methods:
                figures = run_once(METHODS[name], self.job(names, ports))
                merged = results[name]
                merged.walls += figures.walls
                merged.cpus += figures.cpus
                merged.problems += figures.problems
                merged.stdout_bytes += figures.stdout_bytes
                for problem in figures.problems[:3]:
                    print(f"  {name}: {problem}", file=sys.stderr)
        return results

    def at_rtt(self, rtt_ms: float, sizes: list[int], methods: list[str], rounds: int) -> None:
        """Every fleet size in ``sizes``, behind a forwarder that adds ``rtt_ms``."""
        ports = {host.name: host.port for host in self.made.hosts}
        forwarder = None
        if rtt_ms > 0:
            forwarder, by_target = latency_forwarder.start(list(ports.values()), rtt_ms)
            ports = {name: by_target[port] for name, port in ports.items()}
            trust_ports(self.made, ports)
        try:
            for hosts in sizes:
                before = load()
                results = self.compare(hosts, rtt_ms, ports, methods, rounds)
                print(f"\n{table(hosts, rtt_ms, results)}\n")
                json_sizes = results.get("forensics", Figures()).stdout_bytes
                if json_sizes:
                    size = statistics.median(json_sizes)
                    print(f"sweep --format json: {size:.0f} bytes ({size / hosts:.0f} a host)")
                print(f"before: {before}; after: {load()}", flush=True)
        finally:
            if forwarder is not None:
                forwarder.terminate()
                forwarder.wait()

    def profile(self, hosts: int, ports: dict[str, int], path: Path) -> None:
        names = tuple(host.name for host in self.made.hosts[:hosts])
        job = self.job(names, ports)
        raw = path.with_name(path.name + ".raw")  # py-spy's own output, kept beside it
        spy = ("py-spy", "record", "--gil", "--nonblocking", "--format", "raw",
               "--rate", str(PROFILE_RATE), "-o", str(raw), "--")  # fmt: skip
        figures = run_once(METHODS["forensics"], job, spy)
        summary = summarize(raw.read_text(), PROFILE_RATE, 40)
        path.write_text(
            f"forensics sweep, {hosts} hosts, RTT 0, under py-spy --gil (wall "
            f"{figures.walls[0]:.1f} s, {load()}):\n\n{summary}\n"
        )
        print(summary)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--rtt-ms", type=float, nargs="+", default=[0.0, 50.0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--methods", nargs="+", choices=sorted(METHODS),
                        default=["forensics", "paramiko-pool", "openssh", "ansible-raw",
                                 "parallel-ssh"])  # fmt: skip
    parser.add_argument(
        "--profile", type=Path, help="profile one sweep of --hosts[-1] hosts into this file"
    )
    arguments = parser.parse_args()
    byte_compile()
    print(machine())
    print(f"kernel log (shared by every host): {kernel_log_bytes()} bytes; {load()}")
    specs = [spec for probe in PROBES for spec in probe.sections(CollectOptions())]
    script = compose(specs)
    with tempfile.TemporaryDirectory(prefix=f"bench-fleet-{os.getpid()}-") as directory:
        root = Path(directory)
        with loopback_fleet(root / "fleet", max(arguments.hosts)) as made:
            bench = Bench(made, script, root / "runs")
            direct = {host.name: host.port for host in made.hosts}
            if arguments.profile:
                bench.profile(arguments.hosts[-1], direct, arguments.profile)
                return
            for rtt_ms in arguments.rtt_ms:
                bench.at_rtt(rtt_ms, arguments.hosts, arguments.methods, arguments.rounds)


if __name__ == "__main__":
    main()
