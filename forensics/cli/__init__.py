"""The `forensics` command line: a thin layer over the library API.

Exit codes: 0 success; 1 an analysis error the user can act on (message + hint);
2 usage error (typer's default); 101 a bug in forensics (traceback printed).
"""

from __future__ import annotations

import sys
import traceback

import typer

from forensics.cli import analyze as _analyze_cmd
from forensics.cli import ingest as _ingest_cmd
from forensics.cli import replay as _replay_cmd
from forensics.cli import sample as _sample_cmd
from forensics.cli import templates as _templates_cmd

app = typer.Typer(
    name="forensics",
    help="Incident postmortems from vLLM, NCCL and Kubernetes logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("analyze")(_analyze_cmd.analyze)
app.command("ingest")(_ingest_cmd.ingest)
app.command("replay")(_replay_cmd.replay)
app.command("sample")(_sample_cmd.sample)
app.command("templates")(_templates_cmd.templates)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True),
) -> None:
    """Incident postmortems from vLLM, NCCL and Kubernetes logs."""
    if version:
        from forensics import __version__

        typer.echo(f"forensics {__version__}")
        raise typer.Exit()
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit()


EXIT_ANALYSIS_ERROR = 1
EXIT_BUG = 101


def main() -> None:
    """Entry point: run the app, mapping errors to the documented exit codes."""
    from forensics import _malloc
    from forensics._bundled import replay
    from forensics.errors import ForensicsError

    ReplayError = replay("errors").ReplayError

    _malloc.tune()  # before polars loads: its allocator reads its settings once
    try:
        app()  # standalone: usage errors print and exit 2, --help exits 0
    except (ForensicsError, ReplayError) as e:
        from forensics.cli._console import visible

        print(f"error: {visible(e.message)}", file=sys.stderr)
        if e.hint:
            print(f"hint: {visible(e.hint)}", file=sys.stderr)
        sys.exit(EXIT_ANALYSIS_ERROR)
    except Exception:  # noqa: BLE001 - the last line of defence: report our bug
        traceback.print_exc()
        print("\nforensics hit an internal error (a bug). Please report it with the traceback above.", file=sys.stderr)
        sys.exit(EXIT_BUG)
