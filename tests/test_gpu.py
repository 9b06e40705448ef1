"""The GPU probe on scenario hosts whose nvidia-smi answers from tests/samples/nvidia-smi."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.core.models import CollectOptions, SectionResult
from forensics.core.probe import Captured, RuleContext
from forensics.probes import gpu
from tests.conftest import run_cli
from tests.gpu_shim import force_command, shim_directory
from tests.sshd import SshServer


def _collect_on_scenario(
    make_sshd: Any, tmp_path: Path, scenario: str, *extra: str
) -> dict[str, Any]:
    shims = shim_directory(tmp_path, scenario)
    server: SshServer = make_sshd(force_command=force_command(tmp_path, shims))
    result = run_cli(
        "collect", *server.target_args(), "--out", str(tmp_path / "out"), "-f", "json",
        "--fail-on", "never", *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _collect_locally(tmp_path: Path, scenario: str, *probes: str) -> dict[str, Any]:
    shims = shim_directory(tmp_path, scenario)
    also = [word for probe in probes for word in ("--probe", probe)]
    result = run_cli(
        "collect", "local", "--probe", "gpu", *also, "--out", str(tmp_path / "out"), "-f", "json",
        "--fail-on", "never",
        env={"PATH": f"{shims}:{os.environ['PATH']}"},
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _ids(report: dict[str, Any]) -> list[str]:
    return [finding["id"] for finding in report["findings"]]


def test_healthy_gpus_are_read_with_their_process_and_raise_nothing(
    make_sshd: Any, tmp_path: Path
) -> None:
    report = _collect_on_scenario(make_sshd, tmp_path, "healthy")
    facts = report["facts"]["gpu"]
    assert [g["name"] for g in facts["gpus"]] == ["NVIDIA H100 80GB HBM3"] * 2
    first, second = facts["gpus"]
    assert (first["memory_used_mib"], first["memory_total_mib"]) == (61234, 81559)
    assert first["bus_id"] == "00000000:3B:00.0" and first["power_draw_w"] == 512.34
    assert first["throttle_reasons"] == [] and second["throttle_reasons"] == ["gpu_idle"]
    assert first["remapped_rows_pending"] is False and first["retired_pages_pending"] is None
    assert facts["apps"][0]["pid"] == 391822 and facts["apps_known"] is True
    assert not [i for i in _ids(report) if i.startswith("gpu.")]


def test_memory_held_with_no_process_is_reported(make_sshd: Any, tmp_path: Path) -> None:
    report = _collect_on_scenario(make_sshd, tmp_path, "held")
    held = [f for f in report["findings"] if f["id"] == "gpu.memory_held_without_process"]
    assert len(held) == 1
    assert held[0]["severity"] == "warning"
    assert held[0]["subject"]["memory_used_mib"] == 55310
    evidence = held[0]["evidence"][0]
    raw = (Path(report["bundle"]) / "raw" / "gpu.txt").read_text().splitlines()
    assert "55310" in raw[evidence["first_line"] - 1]


def test_lost_gpu_is_critical_and_points_at_xid_79(make_sshd: Any, tmp_path: Path) -> None:
    """nvidia-smi says `GPU is lost` and the kernel log holds Xid 79 for that GPU: one
    gpu.xid finding, critical, citing the Xid line, and gpu.smi_failed pointing at it."""
    report = _collect_on_scenario(make_sshd, tmp_path, "lost")
    raw = (Path(report["bundle"]) / "raw" / "kernel_log.txt").read_text().splitlines()
    (xid,) = [f for f in report["findings"] if f["id"] == "gpu.xid"]
    assert xid["severity"] == "critical"
    assert xid["title"] == "GPU 00000000:B1:00.0 reported Xid 79: GPU has fallen off the bus"
    assert xid["subject"]["gpu_uuid"] == "GPU-0c5e9f3a-61d2-4b7e-a8f0-3d9c27e1b546"
    # The Xid line, then the driver's own fallen-off-the-bus line for the same GPU.
    line, lost = xid["evidence"]
    assert line["section"] == lost["section"] == "kernel_log"
    assert raw[line["first_line"] - 1] == line["excerpt"]
    assert "NVRM: Xid (PCI:0000:b1:00): 79, GPU has fallen off the bus." in line["excerpt"]
    assert lost["excerpt"].endswith("NVRM: GPU 0000:b1:00.0: GPU has fallen off the bus.")
    assert not [f for f in report["findings"] if f["id"] == "gpu.fallen_off_bus"]

    (failed,) = [f for f in report["findings"] if f["id"] == "gpu.smi_failed"]
    assert failed["severity"] == "critical"
    assert failed["subject"]["failure"] == "gpu_lost"
    assert (failed["subject"]["xid_codes"], failed["subject"]["xid_bus_ids"]) == (
        [79],
        ["00000000:B1:00.0"],
    )
    assert "GPU is lost" in failed["title"]
    assert "The kernel log agrees: the driver reported Xid 79" in failed["explanation"]
    assert "gpu.xid" in failed["explanation"] and "gpu.xid" in failed["next_steps"][0]
    assert [e["section"] for e in failed["evidence"]] == ["gpu", "kernel_log"]
    assert failed["evidence"][1] == line
    runs = report["facts"]["gpu"]["runs"]
    assert [(r["query"], r["exit_status"]) for r in runs] == [("gpus", 15)]
    assert any(e["kind"] == "gpu_failure" for e in report["timeline"])


def test_an_xid_names_its_gpu_as_nvidia_smi_does(tmp_path: Path) -> None:
    report = _collect_locally(tmp_path, "ecc", "kernel_log")
    xids = {f["subject"]["code"]: f for f in report["findings"] if f["id"] == "gpu.xid"}
    assert sorted(xids) == [63, 94]
    contained = xids[94]
    assert contained["severity"] == "warning"
    assert contained["title"] == (
        "GPU 0 (NVIDIA A100-SXM4-80GB, 00000000:07:00.0) reported Xid 94: Contained memory error"
    )
    assert (contained["subject"]["owner"], contained["subject"]["immediate_action"]) == (
        "hardware",
        "RESTART_APP",
    )
    subject = contained["subject"]
    assert (subject["index"], subject["model"]) == (0, "NVIDIA A100-SXM4-80GB")
    assert subject["gpu_uuid"] == "GPU-1d7c2a90-8e3b-41f5-b6a2-70c4e9d35f18"
    assert "python3 (pid 2151960)" in contained["explanation"]
    assert "nvidia-smi lists it as GPU 0" in contained["explanation"]
    assert xids[63]["evidence"][0]["excerpt"].endswith("reset gpu to activate.")
    assert not [f for f in report["findings"] if f["id"] == "gpu.smi_failed"]


def test_hung_nvidia_smi_is_cut_by_its_timeout_and_the_rest_is_kept(
    make_sshd: Any, tmp_path: Path
) -> None:
    started = time.monotonic()
    report = _collect_on_scenario(make_sshd, tmp_path, "hang", "--gpu-timeout", "2")
    assert time.monotonic() - started < 30
    assert report["status"] == "ok"
    failed = [f for f in report["findings"] if f["id"] == "gpu.smi_failed"]
    assert failed[0]["subject"]["failure"] == "timed_out"
    assert failed[0]["severity"] == "critical"
    sections = {s["name"]: s for s in report["sections"]}
    assert sections["gpu"]["timed_out"] is True
    assert sections["system"]["timed_out"] is False and sections["disk"]["exit_status"] == 0
    assert report["facts"]["system"]["hostname"]
    assert "collection.section_incomplete" in _ids(report)


def test_driver_not_loaded_is_a_warning_with_its_message(tmp_path: Path) -> None:
    report = _collect_locally(tmp_path, "driver_not_loaded")
    failed = [f for f in report["findings"] if f["id"] == "gpu.smi_failed"]
    assert failed[0]["severity"] == "warning"
    assert failed[0]["subject"]["failure"] == "driver_not_loaded"
    assert "couldn't communicate" in failed[0]["subject"]["message"]


def test_uncorrected_ecc_errors_are_critical(tmp_path: Path) -> None:
    report = _collect_locally(tmp_path, "ecc")
    ecc = [f for f in report["findings"] if f["id"] == "gpu.ecc_errors"]
    assert len(ecc) == 1 and ecc[0]["severity"] == "critical"
    assert "2 uncorrected ECC errors" in ecc[0]["title"] and "row remap" in ecc[0]["title"]
    app = report["facts"]["gpu"]["apps"][0]
    assert app["process_name"] is None and app["used_memory_mib"] == 40186
    assert report["facts"]["gpu"]["gpus"][0]["throttle_reasons"] == ["sw_power_cap"]


def test_old_driver_values_and_unknown_fields_are_tolerated(tmp_path: Path) -> None:
    report = _collect_locally(tmp_path, "old_driver")
    gpus = report["facts"]["gpu"]["gpus"]
    assert gpus[1]["ecc_uncorrected_volatile"] is None and gpus[1]["power_draw_w"] is None
    assert gpus[0]["throttle_reasons"] == ["sw_power_cap", "hw_thermal_slowdown"]
    assert gpus[1]["throttle_reasons"] is None
    assert gpus[0]["remapped_rows_pending"] is None
    assert not [i for i in _ids(report) if i.startswith("gpu.")]


def test_a_process_name_holding_a_comma_stays_one_name() -> None:
    text = (
        "@ run gpus\n@ exit gpus 0\n|index, uuid, memory.used [MiB]\n|0, GPU-a, 100\n"
        "@ run apps\n@ exit apps 0\n|gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n"
        "|GPU-a, 77, /opt/a, b/run, 4096 MiB\n"
    )
    facts = gpu.parse({"gpu": _captured(text)}, CollectOptions())
    assert facts.apps[0].process_name == "/opt/a, b/run"
    assert facts.apps[0].used_memory_mib == 4096


def _captured(text: str, timed_out: bool = False) -> Captured:
    result = SectionResult(
        name="gpu", command="", exit_status=124 if timed_out else 0, duration_s=0.1,
        bytes=len(text), truncated=False, timed_out=timed_out, finished=True,
    )  # fmt: skip
    return Captured(result=result, text=text)


_GPU_LINES = st.sampled_from(
    [
        "@ run gpus", "@ run apps", "@ run throttle", "@ exit gpus 0", "@ exit apps 15",
        "@ exit x", "@ absent", "clock 1764450000", "clock 99999999999999",
        "|index, uuid, memory.used [MiB], clocks_throttle_reasons.active, remapped_rows.pending",
        "|gpu_uuid, pid, process_name, used_gpu_memory [MiB]", "|0, GPU-a, 100, 0x44, Yes",
        "|GPU-a, 1, a, b, c, 5", "|[N/A], [Not Supported], nan, inf, 0xzz", "|GPU is lost",
        "|, , , , , ,", "|",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_GPU_LINES | st.text(max_size=30), max_size=25))
def test_gpu_parser_never_raises(lines: list[str]) -> None:
    text = "\n".join(lines)
    for timed_out in (False, True):
        facts = gpu.parse({"gpu": _captured(text, timed_out)}, CollectOptions())
        context = RuleContext(options=CollectOptions(), sections={}, collected_at=datetime.now(UTC))
        assert all(f.id.startswith("gpu.") for f in gpu.rules(facts, context))
