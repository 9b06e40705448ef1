"""Per-function totals of a py-spy profile in its ``raw`` (collapsed stacks) format:
where a process spent its CPU, by function (self: the function itself; total: it and
what it called) and by package.

    py-spy record --format raw --rate 200 -o sweep.txt -- forensics sweep ...
    python bench/profile_summary.py sweep.txt --rate 200
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

# A frame is "function (path/to/file.py:LINE)"; the line is dropped so that a function
# counts once whatever line was running.
_FRAME = re.compile(r"^(?P<function>.*?) \((?P<file>[^()]*?)(?::\d+)?\)$")
_PACKAGE = re.compile(r"(?:site-packages|lib/python3\.\d+)/(?P<package>[^/]+)")


def _where(frame: str) -> tuple[str, str]:
    """(``function (file)``, package) of one frame. py-spy names files from their package
    root (``paramiko/packet.py``) unless they are outside sys.path (absolute)."""
    match = _FRAME.match(frame.strip())
    if match is None:
        return frame.strip(), "?"
    path = match["file"]
    installed = _PACKAGE.search(path)
    if installed is not None:
        package = installed["package"]
    elif path.startswith("/"):
        package = "forensics" if "/forensics/" in path else Path(path).name
    else:
        package = path.split("/")[0]
    short = "/".join(path.split("/")[-2:])
    return f"{match['function']} ({short})", package.removesuffix(".py")


def summarize(text: str, rate: float, top: int) -> str:
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    packages: Counter[str] = Counter()
    samples = 0
    for line in text.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        samples += count
        frames = [_where(frame) for frame in stack.split(";") if "(" in frame]
        if not frames:
            continue
        own[frames[-1][0]] += count
        packages[frames[-1][1]] += count
        for function in {function for function, _ in frames}:
            total[function] += count
    seconds = samples / rate
    lines = [f"{samples} samples at {rate:g} Hz: ~{seconds:.2f} s of CPU (threads not idle)", ""]

    def table(title: str, counts: Counter[str]) -> None:
        lines.extend([title, "| share | CPU s | function |", "|---:|---:|---|"])
        for name, count in counts.most_common(top):
            lines.append(f"| {100 * count / samples:5.1f}% | {count / rate:5.2f} | `{name}` |")
        lines.append("")

    table("By package (self time: the frame on top of the stack)", packages)
    table("By function, self time", own)
    table("By function, total time (it and what it called)", total)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--rate", type=float, default=100, help="py-spy's --rate")
    parser.add_argument("--top", type=int, default=20)
    arguments = parser.parse_args()
    print(summarize(arguments.profile.read_text(), arguments.rate, arguments.top))


if __name__ == "__main__":
    main()
