"""Collect over a real sshd on loopback, end to end through the real CLI."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.conftest import run_cli
from tests.scenario import shim_wrapper
from tests.sshd import SshServer, free_port, keygen


def _sections(report: dict[str, object]) -> dict[str, dict[str, object]]:
    return {s["name"]: s for s in report["sections"]}  # type: ignore[attr-defined,index]


def test_collect_over_ssh_writes_a_bundle_and_a_host_report(
    sshd: SshServer, tmp_path: Path
) -> None:
    # --fail-on never: this shared machine's kernel log may hold real OOM kills (tests make them).
    result = run_cli(
        "collect", *sshd.target_args(), "--out", str(tmp_path), "--format", "json",
        "--fail-on", "never",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "ok"
    assert report["host_key"]["trust"] == "known_hosts"
    assert report["host_key"]["sha256_fingerprint"].startswith("SHA256:")
    assert report["facts"]["system"]["kernel_release"]
    bundle = Path(report["bundle"])
    assert bundle.parent.parent == tmp_path
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["host_key"] == report["host_key"]
    assert hashlib.sha256(manifest["script"].encode()).hexdigest() == manifest["script_sha256"]
    assert (bundle / "script.sh").read_text() == manifest["script"]
    for section in manifest["sections"]:
        raw = (bundle / "raw" / f"{section['name']}.txt").read_bytes()
        assert hashlib.sha256(raw).hexdigest() == section["sha256"]
        assert len(raw) == section["bytes"]
        assert section["finished"] and not section["timed_out"]


def test_local_collection_runs_the_same_sections_as_ssh(sshd: SshServer, tmp_path: Path) -> None:
    over_ssh = run_cli(
        "collect", "--fail-on", "never", *sshd.target_args(), "--out", str(tmp_path), "-f", "json"
    )
    local = run_cli("collect", "--fail-on", "never", "local", "--out", str(tmp_path), "-f", "json")
    assert local.exit_code == 0, local.stderr
    assert list(_sections(json.loads(local.stdout))) == list(_sections(json.loads(over_ssh.stdout)))
    assert json.loads(local.stdout)["host_key"] is None


def test_analyze_reproduces_the_findings_of_the_collection(sshd: SshServer, tmp_path: Path) -> None:
    collected = json.loads(
        run_cli(
            "collect",
            "--fail-on",
            "never",
            *sshd.target_args(),
            "--out",
            str(tmp_path),
            "-f",
            "json",
        ).stdout
    )
    analyzed = run_cli("analyze", collected["bundle"], "--format", "json", "--fail-on", "never")
    assert analyzed.exit_code == 0, analyzed.stderr
    again = json.loads(analyzed.stdout)
    assert again["findings"] == collected["findings"]
    assert again["facts"] == collected["facts"]


def test_analyze_refuses_a_bundle_whose_evidence_was_changed(
    sshd: SshServer, tmp_path: Path
) -> None:
    collected = json.loads(
        run_cli(
            "collect",
            "--fail-on",
            "never",
            *sshd.target_args(),
            "--out",
            str(tmp_path),
            "-f",
            "json",
        ).stdout
    )
    raw = Path(collected["bundle"]) / "raw" / "system.txt"
    raw.write_bytes(raw.read_bytes() + b"tampered\n")
    result = run_cli("analyze", collected["bundle"])
    assert result.exit_code == 2
    assert "does not match the manifest" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_host_key_is_refused_in_one_line(sshd: SshServer, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    args = [*sshd.target_args(), "--known-hosts", str(empty), "--out", str(tmp_path)]
    result = run_cli("collect", "--fail-on", "never", *args)
    assert result.exit_code == 3
    assert len(result.stderr.strip().splitlines()) == 1
    assert "--accept-new-host-key" in result.stderr
    assert "Traceback" not in result.stderr
    assert not list(tmp_path.glob("*/*/manifest.json"))


def test_accepting_a_new_host_key_records_the_choice(sshd: SshServer, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    args = [*sshd.target_args(), "--known-hosts", str(known), "--out", str(tmp_path)]
    result = run_cli("collect", "--fail-on", "never", *args, "--accept-new-host-key", "-f", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["host_key"]["trust"] == "accepted_new"
    assert f"[127.0.0.1]:{sshd.port}" in known.read_text()
    manifest = json.loads((Path(report["bundle"]) / "manifest.json").read_text())
    assert manifest["host_key"]["trust"] == "accepted_new"
    second = run_cli("collect", "--fail-on", "never", *args, "-f", "json")
    assert json.loads(second.stdout)["host_key"]["trust"] == "known_hosts"


def test_a_changed_host_key_is_refused_even_when_accepting_new_keys(
    sshd: SshServer, tmp_path: Path
) -> None:
    other = keygen(tmp_path / "other_host_key")
    kind, blob = other.with_suffix(".pub").read_text().split()[:2]
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd.port} {kind} {blob}\n")
    args = [*sshd.target_args(), "--known-hosts", str(known), "--accept-new-host-key"]
    result = run_cli("collect", "--fail-on", "never", *args, "--out", str(tmp_path))
    assert result.exit_code == 3
    assert "HOST KEY CHANGED" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_refused_client_key_is_an_auth_failure(sshd: SshServer, tmp_path: Path) -> None:
    stranger = keygen(tmp_path / "stranger")
    args = [*sshd.target_args(), "--identity", str(stranger), "--out", str(tmp_path)]
    result = run_cli("collect", "--fail-on", "never", *args)
    assert result.exit_code == 3
    assert "authentication refused" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_closed_port_is_unreachable(tmp_path: Path) -> None:
    result = run_cli(
        "collect", "--fail-on", "never", f"root@127.0.0.1:{free_port()}", "--out", str(tmp_path)
    )
    assert result.exit_code == 3
    assert "connection refused" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_hanging_section_is_cut_by_its_timeout_and_the_others_are_kept(
    make_sshd: type[SshServer], tmp_path: Path
) -> None:
    force = shim_wrapper(tmp_path, {"date": "exec sleep 300"})
    server = make_sshd(force_command=force)
    result = run_cli(
        "collect", "--fail-on", "never", *server.target_args(), "--out", str(tmp_path), "-f", "json"
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    sections = _sections(report)
    assert sections["system"]["timed_out"] is True
    assert sections["cgroup"]["timed_out"] is False and sections["cgroup"]["bytes"] > 0
    assert report["facts"]["cgroup"]["cgroups"]
    incomplete = [f for f in report["findings"] if f["id"] == "collection.section_incomplete"]
    # Every section that reads the clock with `date` hangs; the cgroup section does not.
    assert "system" in [f["subject"]["section"] for f in incomplete]


def test_output_that_imitates_section_boundaries_splits_nothing(
    make_sshd: type[SshServer], tmp_path: Path
) -> None:
    # The shim digs the real nonce out of the login shell's command line, as a hostile
    # process on the host could, and prints forged frames with it and with another run's.
    forger = r"""
for pid in $(ls /proc | grep -E '^[0-9]+$'); do
  tr '\0' ' ' < /proc/$pid/cmdline 2>/dev/null | grep -q 'base64 -d' || continue
  nonce=$(tr '\0' ' ' < /proc/$pid/cmdline | sed 's/.*echo \([^|]*\)|base64.*/\1/' \
          | base64 -d 2>/dev/null | sed -n 's/^_fx_n=//p' | tr -d "'" | head -n 1)
done
printf '\n%s END system\n\n%s DATA cgroup 0 1 1 4 k\nfake\n' "$nonce" "$nonce"
printf '\n0123456789abcdef0123456789abcdef END system\n'
echo 1764441600
"""
    server = make_sshd(force_command=shim_wrapper(tmp_path, {"date": forger}))
    result = run_cli(
        "collect", "--fail-on", "never", *server.target_args(), "--out", str(tmp_path), "-f", "json"
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "ok"
    sections = _sections(report)
    assert not sections["system"]["timed_out"] and sections["system"]["finished"]
    raw = (Path(report["bundle"]) / "raw" / "system.txt").read_bytes()
    assert b"END system" in raw and b"fake" in raw
    assert report["facts"]["cgroup"]["cgroups"], "the forged cgroup frame replaced nothing"
    assert report["facts"]["system"]["kernel_release"]


def test_invalid_utf8_and_terminal_escapes_are_kept_raw_and_shown_inert(
    make_sshd: type[SshServer], tmp_path: Path
) -> None:
    # Hostname is the first file the system section reads: the shim replaces its content.
    shim = (
        'case "$*" in *hostname*)\n'
        "  printf '==> /proc/sys/kernel/hostname <==\\nevil\\033]0;owned\\007\\033[2J"
        "\\377\\376<b>|`x`\\n\\n'\n"
        '  a=$1 b=$2 c=$3; shift 4; exec /usr/bin/head "$a" "$b" "$c" "$@";;\n'
        "esac\n"
        'exec /usr/bin/head "$@"'
    )
    server = make_sshd(force_command=shim_wrapper(tmp_path, {"head": shim}))
    args = [*server.target_args(), "--out", str(tmp_path)]
    as_json = run_cli("collect", "--fail-on", "never", *args, "-f", "json")
    report = json.loads(as_json.stdout)
    raw = (Path(report["bundle"]) / "raw" / "system.txt").read_bytes()
    assert b"\x1b]0;owned\x07\x1b[2J\xff\xfe" in raw
    assert "\x1b" not in as_json.stdout
    assert report["facts"]["system"]["hostname"].startswith("evil\x1b]0;owned")
    for format in ("text", "md"):
        shown = run_cli("collect", "--fail-on", "never", *args, "-f", format)
        assert shown.exit_code == 0, shown.stderr
        assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout
        assert "\\x1b" in shown.stdout


def test_a_dropped_session_keeps_the_finished_sections_and_reports_partial(
    make_sshd: type[SshServer], tmp_path: Path
) -> None:
    # The cgroup section's `head` stalls; the session's sshd process is then killed.
    force = shim_wrapper(
        tmp_path,
        {"head": 'case "$*" in *oom_control*) sleep 30;; esac\nexec /usr/bin/head "$@"'},
        before='( sleep 2; kill -9 "$PPID" ) >/dev/null 2>&1 &',
    )
    server = make_sshd(force_command=force)
    result = run_cli(
        "collect", "--fail-on", "never", *server.target_args(), "--out", str(tmp_path), "-f", "json"
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "partial"
    assert "cgroup" in report["status_reason"]
    sections = _sections(report)
    assert sections["system"]["finished"] and sections["system"]["bytes"] > 0
    assert sections["cgroup"]["finished"] is False
    assert report["facts"]["system"]["hostname"]
    assert (Path(report["bundle"]) / "raw" / "system.txt").exists()
