"""A sweep in Prometheus' words: ``sweep --metrics-file`` (node_exporter's textfile
collector format, written atomically) and ``sweep --every … --metrics-port`` (``/metrics``).

Per host: the last collection's status, duration, and finding counts by severity and by
id; per sweep: hosts collected and not, its duration and when it finished. Both outputs are
rendered from the latest ``FleetReport`` by one collector, so they never disagree.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from forensics.core.errors import OutputUnwritable
from forensics.core.models import Severity
from forensics.fleet.report import FleetReport, HostStatus

PREFIX = "forensics"


class SweepMetrics(Collector):
    """Metrics of the latest sweep; ``update`` swaps in the next one."""

    def __init__(self, shard: str | None = None) -> None:
        self._report: FleetReport | None = None
        self._running = False
        self._shard = shard or ""
        self._lock = threading.Lock()

    def update(self, report: FleetReport) -> None:
        with self._lock:
            self._report = report
            self._running = False

    def sweep_started(self) -> None:
        with self._lock:
            self._running = True

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            report, running = self._report, self._running
        shard = {"shard": self._shard}
        running_gauge = GaugeMetricFamily(
            f"{PREFIX}_sweep_running", "1 while a sweep is collecting.", labels=list(shard)
        )
        running_gauge.add_metric(list(shard.values()), 1 if running else 0)
        yield running_gauge
        if report is None:
            return
        yield from _sweep_metrics(report, shard)
        yield from _host_metrics(report)

    def registry(self) -> CollectorRegistry:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(self)
        return registry

    def text(self) -> bytes:
        return generate_latest(self.registry())


def _sweep_metrics(report: FleetReport, shard: dict[str, str]) -> Iterable[Metric]:
    labels = list(shard)
    values = list(shard.values())
    hosts = GaugeMetricFamily(
        f"{PREFIX}_sweep_hosts",
        "Hosts of the latest sweep by outcome (collected or not).",
        labels=[*labels, "outcome"],
    )
    hosts.add_metric([*values, "collected"], len(report.collected))
    hosts.add_metric([*values, "not_collected"], len(report.not_collected))
    duration = GaugeMetricFamily(
        f"{PREFIX}_sweep_duration_seconds", "How long the latest sweep took.", labels=labels
    )
    duration.add_metric(values, (report.finished - report.started).total_seconds())
    finished = GaugeMetricFamily(
        f"{PREFIX}_sweep_last_finished_timestamp_seconds",
        "When the latest sweep finished (Unix time).",
        labels=labels,
    )
    finished.add_metric(values, report.finished.timestamp())
    return (hosts, duration, finished)


def _host_metrics(report: FleetReport) -> Iterable[Metric]:
    status = GaugeMetricFamily(
        f"{PREFIX}_host_collection_status",
        "1 for the status of the host's last collection, 0 for the others.",
        labels=["host", "status"],
    )
    duration = GaugeMetricFamily(
        f"{PREFIX}_host_collection_duration_seconds",
        "How long the host's last collection took.",
        labels=["host"],
    )
    by_severity = GaugeMetricFamily(
        f"{PREFIX}_host_findings",
        "Findings of the host's last collection by severity.",
        labels=["host", "severity"],
    )
    by_id = GaugeMetricFamily(
        f"{PREFIX}_host_findings_by_id",
        "Findings of the host's last collection by finding id.",
        labels=["host", "id"],
    )
    for host in report.hosts:
        for kind in HostStatus:
            status.add_metric([host.name, kind.value], 1 if host.status is kind else 0)
        if host.duration_s is not None:
            duration.add_metric([host.name], host.duration_s)
        if host.report is None or not host.status.collected:
            continue
        severities = Counter(finding.severity for finding in host.report.findings)
        for severity in Severity:
            by_severity.add_metric([host.name, severity.value], severities[severity])
        for finding_id, count in sorted(
            Counter(finding.id for finding in host.report.findings).items()
        ):
            by_id.add_metric([host.name, finding_id], count)
    return (status, duration, by_severity, by_id)


def write_textfile(path: Path, metrics: SweepMetrics) -> None:
    """Write beside ``path`` and rename over it: the textfile collector never reads half."""
    aside = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        aside.write_bytes(metrics.text())
        aside.replace(path)
    except OSError as error:
        aside.unlink(missing_ok=True)
        raise OutputUnwritable(
            f"--metrics-file {path}: cannot write the metrics ({error.strerror})"
        ) from error


def serve(metrics: SweepMetrics, port: int, address: str) -> None:
    """Serve ``/metrics`` from a daemon thread for as long as the process runs."""
    start_http_server(port, addr=address, registry=metrics.registry())
