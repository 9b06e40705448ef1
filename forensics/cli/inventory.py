"""``forensics inventory check`` and ``forensics inventory import-vastai``."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from forensics.cli.messages import say
from forensics.core.errors import UsageError
from forensics.core.escaping import inert

if TYPE_CHECKING:
    # YAML, the SSH config and rich load when the command runs, not for --help.
    from forensics.fleet.inventory import Inventory

MAX_IMPORT_BYTES = 64 * 1024 * 1024

app = typer.Typer(
    help="Check the inventory; import hosts from vast.ai.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.command("check")
def check_command(
    inventory: Annotated[
        Path | None, typer.Argument(metavar="[FILE]", help="Default: ./inventory.yaml.")
    ] = None,
    inventory_option: Annotated[
        Path | None,
        typer.Option("--inventory", help="The inventory file, as `sweep --inventory` names it."),
    ] = None,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print the resolved hosts as JSON.")
    ] = False,
) -> None:
    """Validate the inventory and print every host as a sweep would collect it, then what
    a sweep would fail on before connecting: an identity or known_hosts file that does
    not exist or cannot be read, an SSH config that is missing or malformed, a name that
    is neither an address nor known to the SSH config or /etc/hosts.

    An error names the file, the line and the field, and exits 2:
    inventory.yaml:14: hosts[2].port: must be 1..65535, got 'abc'

    What a sweep would fail on is said on stderr, one line per problem (and under
    "problems" with --json); the exit status stays 0, since a key may be created, or a
    file mounted, before the sweep runs. Exit status: 0 valid; 2 invalid.
    """
    from forensics.fleet.inventory import load_inventory
    from forensics.fleet.preflight import problems

    if inventory is not None and inventory_option is not None and inventory != inventory_option:
        raise UsageError("give the inventory once: FILE or --inventory FILE")
    loaded = load_inventory(inventory or inventory_option or Path("inventory.yaml"))
    found = {host.name: problems(host.target) for host in loaded.hosts}
    if json_output:
        document = loaded.model_dump(mode="json")
        document["problems"] = {name: said for name, said in found.items() if said}
        sys.stdout.write(json.dumps(document, indent=2, allow_nan=False) + "\n")
    else:
        sys.stdout.write(render_inventory(loaded))
        for name, said in found.items():
            for problem in said:
                say(f"warning: {name}: {problem}")


def render_inventory(inventory: Inventory, width: int | None = None) -> str:
    from rich.text import Text

    from forensics.reports.terminal import plain_console, plain_table

    buffer = io.StringIO()
    console = plain_console(buffer, width)
    groups = f"{len(inventory.groups)} group{'s' if len(inventory.groups) != 1 else ''}"
    console.print(Text(f"{inventory.path}: {len(inventory.hosts)} hosts in {groups}, valid"))
    table = plain_table(
        "host", "group", "address", "via", "sudo", "timeout", "probes", "focus", "logs", "line"
    )
    for host in inventory.hosts:
        table.add_row(
            Text(inert(host.name)),
            Text(host.group or "-"),
            Text(inert(host.address)),
            Text(inert(host.target.proxy_jump or "-")),
            Text("yes" if host.target.sudo else "-"),
            Text(f"{host.options.timeout:g}s"),
            Text(",".join(host.options.probes) or "all"),
            Text(inert(host.options.focus or "-")),
            Text(str(len(host.options.logs) + len(host.options.expected_logs) or "-")),
            Text(host.source.rsplit(":", 1)[-1]),
        )
    console.print(table)
    return buffer.getvalue()


@app.command("import-vastai")
def import_vastai_command(
    source: Annotated[
        str, typer.Argument(metavar="FILE|-", help="`vastai show instances --raw` output.")
    ],
) -> None:
    """Turn vast.ai instances into inventory entries, printed as YAML to paste.

    Example: vastai show instances --raw | forensics inventory import-vastai - >> hosts.yaml
    """
    from forensics.fleet.located_yaml import read_bounded
    from forensics.fleet.vastai import notes, parse_instances, to_yaml

    try:
        text = read_bounded("/dev/stdin" if source == "-" else source, MAX_IMPORT_BYTES)
    except (OSError, ValueError) as error:
        raise UsageError(f"{source}: cannot read: {error}") from error
    hosts, skipped = parse_instances(text)
    for note in notes(hosts, skipped):
        say(note)  # one inert line per note, whatever a label holds
    sys.stdout.write(to_yaml(hosts))
