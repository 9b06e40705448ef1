"""Write a ``processes`` section the way the host writes it (GNU ``head -v`` framing, a
separator file after every file), for parser tests that need shapes no machine here has:
one section holding both snapshots (``--probe processes`` alone, and every bundle from
before the split), or, with ``split``, the first snapshot in ``processes`` and the second
in ``processes_again``, as a default collection writes them."""

from __future__ import annotations

from dataclasses import dataclass, field

from forensics.core.models import CollectOptions, SectionResult
from forensics.core.probe import Captured
from forensics.probes.processes import AGAIN, SECTION, ProcessesFacts, parse

NONCE = "0b8e61d2-5a1f-4c3e"


@dataclass
class HostProcess:
    pid: int
    name: str
    state: str = "S"
    ppid: int = 1
    threads: int = 1
    start_ticks: int = 1000
    argv: list[str] = field(default_factory=list)
    wchan: str = "0"
    flags: int = 0x400100
    exit_status: int = 0

    def stat(self) -> str:
        fields = [
            str(self.pid), f"({self.name})", self.state, str(self.ppid), str(self.pid),
            str(self.pid), "0", "-1", str(self.flags), *["0"] * 8, "20", "0",
            str(self.threads), "0", str(self.start_ticks), "1000000", "250",
            "18446744073709551615", *["0"] * 26, str(self.exit_status),
        ]  # fmt: skip
        return " ".join(fields) + "\n"

    def files(self) -> dict[str, str]:
        return {
            "stat": self.stat(),
            "status": f"Name:\t{self.name}\nUmask:\t0022\nState:\t{self.state}\nUid:\t1000\t1000"
            "\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nFDSize:\t64\nGroups:\t",
            "cmdline": "".join(arg + "\x00" for arg in self.argv),
            "wchan": self.wchan,
            "cgroup": "12:pids:/\n4:memory:/docker/abc\n0::/\n",
        }


def head_dump(paths: list[tuple[str, str | None]], nonce: str = NONCE) -> str:
    """What one ``head -v -c N path .s path .s ...`` prints; None: the file could not open."""
    printed: list[str] = []
    for path, content in paths:
        for name, text in ((path, content), (".s", nonce + "\n")):
            if text is None:
                continue
            printed.append(("\n" if printed else "") + f"==> {name} <==\n{text}")
    return "".join(printed)


def section_text(
    first: list[HostProcess],
    second: list[HostProcess] | None = None,
    *,
    threads: str = "",
    links: str = "",
    collector: int | None = None,
    nonce: str = NONCE,
) -> str:
    text = f"nonce {nonce}\nclock_ticks 100\npage_size 4096\nbtime 1764441600\n"
    if collector is not None:
        text += f"self {collector}\n"
    text += "snapshot 1 8400.00\n"
    for kind in ("stat", "status", "cmdline", "wchan", "cgroup"):
        text += head_dump([(f"/proc/{p.pid}/{kind}", p.files()[kind]) for p in first], nonce)
    text += "threads\n" + threads + "links\n" + links + f"==> .s <==\n{nonce}\n"
    if second is not None:
        text += "snapshot 2 8402.00\n"
        text += head_dump([(f"/proc/{p.pid}/stat", p.stat()) for p in second], nonce)
        text += "end\n"
    return text


def captured(text: str, name: str = SECTION, **result: object) -> Captured:
    fields: dict[str, object] = {
        "name": name,
        "command": "",
        "exit_status": 0,
        "duration_s": 2.1,
        "bytes": len(text.encode()),
        "truncated": False,
        "timed_out": False,
        "finished": True,
    }
    fields.update(result)
    return Captured(result=SectionResult.model_validate(fields), text=text)


def parse_text(text: str, focus: str | None = None, **result: object) -> ProcessesFacts:
    return parse({"processes": captured(text, **result)}, CollectOptions(focus=focus))


def split(text: str) -> tuple[str, str]:
    """A one-section text as a default collection writes it: the first snapshot in
    ``processes``; ``processes_again`` opens with the same nonce and holds the rest.

    >>> split("nonce N\\nsnapshot 1 5.00\\nthreads\\nsnapshot 2 7.00\\nend\\n")
    ('nonce N\\nsnapshot 1 5.00\\nthreads\\n', 'nonce N\\nsnapshot 2 7.00\\nend\\n')
    """
    first_line = text.partition("\n")[0]
    at = text.index("\nsnapshot 2 ") + 1
    return text[:at], f"{first_line}\n{text[at:]}"


def parse_split(
    first: str, again: str | None, focus: str | None = None, **again_result: object
) -> ProcessesFacts:
    captures = {SECTION: captured(first)}
    if again is not None:
        captures[AGAIN] = captured(again, name=AGAIN, **again_result)
    return parse(captures, CollectOptions(focus=focus))
