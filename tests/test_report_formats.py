"""Host reports of real collections, in every format: the answer first, then the details,
in a fixed order. Structure is asserted, not bytes, so wording can change freely."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from forensics.judge.host_report import HostReport
from forensics.remote.bundle import load
from forensics.reports.escaping import inert
from tests.conftest import run_cli
from tests.hostile.markup import ANSI, SCRIPT, hostile_host
from tests.rendered import (
    assert_inert_page,
    markdown_first_paragraph,
    markdown_headings,
    markdown_html,
    markdown_inline_kinds,
    markdown_table,
    parse_html,
)
from tests.sshd import SshServer, sshd_available

HOST_SECTIONS_MD = ["Findings", "Timeline", "Host", "What could not be checked", "Collection"]
HOST_SECTIONS_HTML = ["headline", "findings", "timeline", "system", "not-checked", "collection"]


def _collect(tmp: Path, *target: str) -> Path:
    # Only the system probe: this machine's own state (OOM kills left by other tests,
    # zombies) must not change the shape these tests check.
    args = ("--probe", "system", "--fail-on", "never")
    result = run_cli(
        "collect", "--fail-on", "never", *target, *args, "--out", str(tmp), "--format", "json"
    )
    assert result.exit_code == 0, result.stderr
    return Path(json.loads(result.stdout)["bundle"])


def _report(bundle: Path, format: str, out: Path) -> str:
    result = run_cli("report", str(bundle), "--format", format, "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    return out.read_text()


@pytest.fixture(scope="module")
def local_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _collect(tmp_path_factory.mktemp("local"), "local")


@pytest.fixture(scope="module")
def hostile_bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if not sshd_available():
        pytest.skip("OpenSSH server not installed (apt-get install openssh-server)")
    root = tmp_path_factory.mktemp("hostile")
    servers: list[SshServer] = []

    def start(**kwargs: object) -> SshServer:
        server = SshServer(root=root / "sshd", **kwargs).start()  # type: ignore[arg-type]
        servers.append(server)
        return server

    server = hostile_host(start, root / "files", "http://127.0.0.1:9/forensics-leak")
    try:
        yield _collect(root / "out", *server.target_args())
    finally:
        for started in servers:
            started.stop()


def test_markdown_report_of_a_local_collection_puts_the_verdict_first(
    local_bundle: Path, tmp_path: Path
) -> None:
    markdown = _report(local_bundle, "md", tmp_path / "local.md")
    assert markdown_headings(markdown, 1) == ["Forensics report: local"]
    assert markdown_first_paragraph(markdown).content.startswith(
        "**No findings; checked system (1 section"
    )
    assert markdown_headings(markdown, 2) == HOST_SECTIONS_MD
    hostname = Path("/proc/sys/kernel/hostname").read_text().strip()
    host = markdown_table(markdown, "Fact")
    assert ["Hostname", hostname] in host.rows
    assert markdown_table(markdown, "Section").rows[0][:2] == ["system", "0"]
    assert markdown_table(markdown, "Time (UTC)").rows[0][1].startswith("host booted")


def test_html_report_of_an_ssh_collection_is_one_inert_page_in_order(
    sshd: SshServer, tmp_path: Path
) -> None:
    bundle = _collect(tmp_path, *sshd.target_args())
    html = _report(bundle, "html", tmp_path / "ssh.html")
    page = parse_html(html)
    assert_inert_page(page)
    assert [i for i in page.ids if i in HOST_SECTIONS_HTML] == HOST_SECTIONS_HTML
    assert "No findings; checked system" in page.visible_text
    assert "known hosts" in page.visible_text  # the host key's trust, from the manifest
    assert "<svg" in html and "://" not in html  # nothing to fetch, not even a namespace


def test_json_report_is_the_host_report_that_analyze_builds(
    local_bundle: Path, tmp_path: Path
) -> None:
    rendered = _report(local_bundle, "json", tmp_path / "local.json")
    report = HostReport.model_validate_json(rendered)
    assert report.bundle == str(local_bundle)
    assert report.facts.system is not None and report.facts.system.hostname
    schema = json.loads(run_cli("schema").stdout)
    assert set(json.loads(rendered)) <= set(schema["properties"])
    again = run_cli("report", str(tmp_path / "local.json"), "--format", "md")
    assert again.exit_code == 0 and "# Forensics report: local" in again.stdout


def test_collect_and_analyze_print_html_with_the_same_sections(
    local_bundle: Path, tmp_path: Path
) -> None:
    collected = run_cli("collect", "--fail-on", "never", "--out", str(tmp_path), "--format", "html")
    analyzed = run_cli("analyze", str(local_bundle), "--format", "html")
    for result in (collected, analyzed):
        assert result.exit_code == 0, result.stderr
        assert result.stdout.startswith("<!DOCTYPE html>")
        ids = parse_html(result.stdout).ids
        assert [i for i in ids if i in HOST_SECTIONS_HTML] == HOST_SECTIONS_HTML


def test_hostile_host_identity_stays_text_in_markdown(hostile_bundle: Path, tmp_path: Path) -> None:
    markdown = _report(hostile_bundle, "md", tmp_path / "hostile.md")
    headline = markdown_first_paragraph(markdown).content
    assert headline.startswith("**WARNING:** Could not fully check: section system was cut at")
    assert markdown_headings(markdown, 2) == HOST_SECTIONS_MD
    findings = markdown_table(markdown, "#")
    assert [row[2] for row in findings.rows] == ["collection.section_incomplete"]
    host = markdown_table(markdown, "Fact")
    assert all(len(row) == 2 for row in host.rows) and len(host.rows) == 10
    facts = dict((row[0], row[1]) for row in host.rows)
    assert facts["Hostname"].startswith(SCRIPT + "| a | b | `rm -rf /`")
    assert facts["Hostname"].endswith(inert(ANSI))
    assert facts["PID 1"] == f"{SCRIPT} (not a known init)"
    assert "\ufffd" in facts["PID 1 command"] and "\\x1b[31m" in facts["PID 1 command"]
    assert "![os]" in facts["OS"] and "<img" in facts["OS"]
    assert not markdown_inline_kinds(markdown) & {"image", "link", "html_inline"}
    assert markdown_html(markdown) == []
    assert "\x1b" not in markdown


def test_hostile_host_identity_stays_text_in_html_and_terminal(
    hostile_bundle: Path, tmp_path: Path
) -> None:
    html = _report(hostile_bundle, "html", tmp_path / "hostile.html")
    page = parse_html(html)
    assert_inert_page(page)
    assert "<script" not in html.lower() and "<img" not in html.lower()
    assert SCRIPT in page.visible_text and "\ufffd" in page.visible_text
    assert "\x1b" not in html
    terminal = run_cli("analyze", str(hostile_bundle))
    assert terminal.exit_code == 0, terminal.stderr
    assert SCRIPT in terminal.stdout and "\x1b" not in terminal.stdout
    manifest, _ = load(hostile_bundle)
    assert [s.truncated for s in manifest.sections] == [True]


def test_report_of_something_that_is_no_bundle_is_one_line_and_status_2(tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_bytes(b'{"tool_version": "\xff"}')
    for source in (tmp_path / "missing", junk, tmp_path):
        result = run_cli("report", str(source), "--format", "html")
        assert result.exit_code == 2, result.stdout
        assert result.stderr.startswith("forensics: ") and result.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk.json"]


def test_every_template_ships_in_the_package() -> None:
    """A template left out of package-data works from the source tree and breaks installs."""
    root = Path(__file__).parent.parent
    globs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["forensics.reports"]
    shipped = {path for pattern in globs for path in (root / "reports").glob(pattern)}
    templates = {path for path in (root / "reports" / "templates").rglob("*") if path.is_file()}
    assert templates and templates <= shipped, sorted(map(str, templates - shipped))
