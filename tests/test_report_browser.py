"""The HTML report in a real headless Chromium: it draws something, runs nothing, and
fetches nothing, even when the host's data is written to make it fetch."""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from PIL import Image

from forensics.core.models import Severity
from forensics.fleet.report import FleetReport, HostStatus, count_findings, host_order
from forensics.reports import Format, render_host
from tests.conftest import run_cli
from tests.hostile.markup import SCRIPT, hostile_report
from tests.rendered import assert_inert_page, parse_html
from tests.test_sweep_report import _collected, _finding, _not_collected, _report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is not installed (apt-get install chromium; ./run-tests installs it)",
)


@dataclass
class Sentinel:
    """A listener on loopback that records the first bytes of every connection. Chromium
    uses it as its proxy too, so nothing it sends leaves 127.0.0.1, and the page's hostile
    URLs point at it with a token no other request can carry."""

    token: str = field(default_factory=lambda: f"forensics-leak-{secrets.token_hex(6)}")
    seen: list[bytes] = field(default_factory=list)
    server: socket.socket = field(default_factory=socket.socket)

    @property
    def port(self) -> int:
        return int(self.server.getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{self.token}"

    def start(self) -> Sentinel:
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(32)
        threading.Thread(target=self._serve, daemon=True).start()
        return self

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            with connection:
                connection.settimeout(2)
                try:
                    self.seen.append(connection.recv(4096))
                except OSError:
                    self.seen.append(b"")

    def leaks(self) -> list[bytes]:
        return [request for request in self.seen if self.token.encode() in request]


@pytest.fixture
def sentinel() -> Iterator[Sentinel]:
    listener = Sentinel().start()
    yield listener
    listener.server.close()


@dataclass
class Opened:
    screenshot: Path
    dom: str

    def ink(self) -> float:
        """The share of pixels that are not the background (the most common colour)."""
        with Image.open(self.screenshot) as image:
            assert image.size == (1200, 1600)
            found = image.convert("RGB").getcolors(maxcolors=1 << 24)
        assert found is not None
        return 1 - max(count for count, _ in found) / (1200 * 1600)


def open_in_chromium(page: Path, sentinel: Sentinel, tmp_path: Path) -> Opened:
    assert CHROMIUM is not None
    screenshot = tmp_path / f"{page.stem}.png"
    completed = subprocess.run(
        [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={tmp_path / ('profile-' + page.stem)}",
            f"--proxy-server=http://127.0.0.1:{sentinel.port}", "--proxy-bypass-list=<-loopback>",
            f"--screenshot={screenshot}", "--window-size=1200,1600", "--dump-dom", page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=90,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert screenshot.is_file(), completed.stderr[-2000:]
    return Opened(screenshot=screenshot, dom=completed.stdout)


def test_the_page_checks_detect_a_fetch_and_a_blank_page(
    sentinel: Sentinel, tmp_path: Path
) -> None:
    """The two checks below can fail: a page that fetches is caught, a blank one too."""
    control = tmp_path / "control.html"
    control.write_text(f'<!DOCTYPE html><html><body><img src="{sentinel.url}/x.png"></body></html>')
    opened = open_in_chromium(control, sentinel, tmp_path)
    assert sentinel.leaks(), "the sentinel saw no request from a page that makes one"
    assert opened.ink() < 0.001  # a broken-image icon on white


def test_a_real_report_renders_in_chromium(sentinel: Sentinel, tmp_path: Path) -> None:
    bundle = run_cli(
        "collect",
        "--fail-on",
        "never",
        "--probe",
        "system",
        "--out",
        str(tmp_path),
        "--format",
        "json",
    )
    assert bundle.exit_code == 0, bundle.stderr
    saved = tmp_path / "local.json"
    saved.write_text(bundle.stdout)
    page = tmp_path / "local.html"
    result = run_cli("report", str(saved), "--format", "html", "-o", str(page))
    assert result.exit_code == 0, result.stderr
    opened = open_in_chromium(page, sentinel, tmp_path)
    assert opened.ink() > 0.02, "the screenshot is (nearly) blank"
    dom = parse_html(opened.dom)
    assert_inert_page(dom)
    assert "No findings; checked system" in dom.visible_text
    assert {"svg", "circle", "table"} <= dom.tag_names


def test_hostile_report_in_chromium_runs_and_fetches_nothing(
    sentinel: Sentinel, tmp_path: Path
) -> None:
    page = tmp_path / "hostile.html"
    page.write_text(render_host(hostile_report(sentinel.url), Format.html))
    opened = open_in_chromium(page, sentinel, tmp_path)
    assert sentinel.leaks() == []
    assert opened.ink() > 0.02, "the screenshot is (nearly) blank"
    dom = parse_html(opened.dom)
    assert_inert_page(dom)
    assert "script" not in dom.tag_names and "img" not in dom.tag_names
    assert SCRIPT in dom.visible_text and sentinel.url in dom.visible_text


def _fleet_of(count: int) -> FleetReport:
    """A sweep of ``count`` hosts: most clean, some with zombies, a few not collected."""
    hosts = []
    for index in range(count):
        name = f"prover-{index:02d}"
        if index % 16 == 3:
            hosts.append(_not_collected(name, HostStatus.unreachable, f"{name}: timed out"))
        elif index % 5 == 0:
            hosts.append(_collected(name, [_finding(Severity.critical, 4000 + index)]))
        elif index % 7 == 0:
            hosts.append(_collected(name, [_finding(Severity.warning, 5000 + index)]))
        else:
            hosts.append(_collected(name, []))
    hosts.sort(key=host_order)
    fleet = _report()
    return fleet.model_copy(update={"hosts": hosts, "finding_counts": count_findings(hosts)})


def test_a_fleet_page_of_64_hosts_renders_in_chromium(sentinel: Sentinel, tmp_path: Path) -> None:
    saved = tmp_path / "fleet.json"
    saved.write_text(_fleet_of(64).model_dump_json())
    page = tmp_path / "fleet.html"
    result = run_cli("report", str(saved), "--format", "html", "-o", str(page))
    assert result.exit_code == 0, result.stderr
    opened = open_in_chromium(page, sentinel, tmp_path)
    assert sentinel.leaks() == []
    assert opened.ink() > 0.02, "the screenshot is (nearly) blank"
    dom = parse_html(opened.dom)
    assert_inert_page(dom)
    for index in range(64):
        assert f"prover-{index:02d}" in dom.visible_text
    first = dom.visible_text.index("prover-")
    assert "critical" in dom.visible_text[: first + 200].lower(), "worst hosts come first"
