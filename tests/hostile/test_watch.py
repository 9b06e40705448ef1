"""``watch`` and ``wait`` against a hostile host: ``--for`` and ``--timeout`` are wall-clock
whatever the host sends or withholds, memory stays bounded, and what the host said reaches
the terminal inert."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.hostile.crafted import (
    BIDI,
    OSC_0,
    OSC_52,
    SLACK_S,
    assert_inert,
    assert_one_inert_line,
    crafted_host,
    timed_cli,
)
from tests.sshd import SshServer

MakeSshd = Callable[..., SshServer]


def test_watch_for_3s_ends_at_3s_when_the_host_never_answers(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    host = crafted_host(make_sshd, tmp_path, "exec sleep 3600")
    run = timed_cli("watch", *host.target_args(), "--for", "3s", "--every", "1s", timeout=60)
    assert 3 <= run.seconds < 3 + 1 + SLACK_S, run.seconds
    assert run.result.exit_code == 3, run.result
    assert "no sample came back before --for ended" in assert_one_inert_line(run.result.stderr)
    assert run.result.stdout == ""


def test_watch_for_ends_on_time_while_the_host_floods_forged_samples(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    # Well-formed samples as fast as the connection carries them, with a hostile cgroup name.
    body = (
        f"printf '%s CG 2 /sys/{OSC_52}{BIDI}\\n' \"$nn\"; "
        "while :; do printf '%s S 100.0 1000 400 20 30 104857600 max\\n' \"$nn\"; done"
    )
    nonce_of_sampler = (
        'nn=$(printf %s "$SSH_ORIGINAL_COMMAND" | sed "s/^echo \\([^|]*\\)|.*/\\1/" '
        '| base64 -d | sed -n "s/^_n=\\([0-9a-f]*\\);.*/\\1/p")\n'
    )
    host = crafted_host(make_sshd, tmp_path, nonce_of_sampler + body)
    run = timed_cli(
        "watch", *host.target_args(), "--for", "2s", "--every", "1s", "-f", "json", timeout=60
    )
    assert run.seconds < 2 + 1 + SLACK_S, run.seconds
    assert run.result.exit_code == 0, run.result.stderr
    assert run.result.stdout.count("\n") > 1
    assert_inert(run.result.stdout)
    assert "\\u202e" in run.result.stdout
    text = timed_cli("watch", *host.target_args(), "--for", "1s", "--every", "1s", timeout=60)
    assert text.result.exit_code == 0, text.result.stderr
    assert_inert(text.result.stdout)
    assert "/sys/\\x1b]52;" in text.result.stdout


def test_endless_output_without_a_newline_ends_watch_with_one_line(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    host = crafted_host(make_sshd, tmp_path, "exec cat /dev/zero")
    run = timed_cli("watch", *host.target_args(), "--for", "30s", timeout=60)
    assert run.seconds < 5 + SLACK_S
    assert run.result.exit_code == 3
    assert "line of over" in assert_one_inert_line(run.result.stderr)


def test_what_the_sampling_loop_said_on_stderr_is_shown_inert(
    make_sshd: MakeSshd, tmp_path: Path
) -> None:
    body = f"printf 'x\\n{OSC_52}{OSC_0}{BIDI}sampler died\\n' >&2; exit 1"
    host = crafted_host(make_sshd, tmp_path, body)
    for command in (["watch", "--for", "5s"], ["wait", "--available", ">=1KiB"]):
        run = timed_cli(command[0], *host.target_args(), *command[1:], timeout=60)
        assert run.seconds < 5 + SLACK_S
        assert run.result.exit_code == 3, run.result
        line = assert_one_inert_line(run.result.stderr)
        assert "the sampling loop ended" in line and "\\x1b]52;" in line and "\\u202e" in line
