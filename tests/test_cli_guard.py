"""The CLI's last line of defence (forensics/cli/guard.py): whatever escapes a command ends
in one line and a documented exit status, including what click disguises as ``Abort``."""

from __future__ import annotations

import pytest
import typer

from forensics.cli.guard import run
from forensics.core.errors import Unreachable
from forensics.core.exit_status import ExitStatus


def _app(error: BaseException) -> typer.Typer:
    app = typer.Typer()

    @app.command()
    def fail() -> None:
        raise error

    return app


@pytest.mark.parametrize(
    ("error", "status", "said"),
    [
        # click would print a blank line and call an EOFError (here: a library's) "Abort".
        (EOFError(), ExitStatus.internal_error, "internal error: EOFError (set"),
        (Unreachable("gpu-a: no route"), ExitStatus.not_collected, "gpu-a: no route"),
        (ValueError("odd"), ExitStatus.internal_error, "internal error: ValueError: odd"),
    ],
)
def test_what_escapes_a_command_is_one_line_and_its_status(
    error: BaseException,
    status: int,
    said: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("FORENSICS_DEBUG", raising=False)
    with pytest.raises(SystemExit) as ended:
        run(_app(error), args=[])
    assert ended.value.code == status
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1 and said in stderr, stderr
