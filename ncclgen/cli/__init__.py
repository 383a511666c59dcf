"""The `ncclgen` command: a click group whose subcommands are imported only when used.

Lazy loading keeps `ncclgen slurm` from importing the kubernetes client or torch, and keeps each
subcommand in its own module (cli/<topic>.py) next to the concept it drives.
"""

from __future__ import annotations

import gc
import importlib
import sys
from typing import NoReturn

import click

from .. import __version__
from ..errors import UserError, error_lines, printable

# command name -> (module, attribute, one-line help shown by `ncclgen --help`)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "clusters": ("ncclgen.cli.clusters", "clusters", "List descriptors and show a node's topology."),
    "workloads": ("ncclgen.cli.workloads", "workloads", "List workloads and print one to copy."),
    "validate": ("ncclgen.cli.clusters", "validate", "Validate descriptor files."),
    "schema": ("ncclgen.cli.clusters", "schema_cmd", "Print the descriptor JSON Schema."),
    "env": ("ncclgen.cli.plan", "env", "Print the plan's environment (shell, dotenv or JSON)."),
    "explain": ("ncclgen.cli.plan", "explain", "Explain every variable, the binding and the launch line."),
    "lint": ("ncclgen.cli.lint", "lint", "Lint an env file, sbatch script or manifest."),
    "slurm": ("ncclgen.cli.slurm", "slurm", "Render an sbatch script."),
    "k8s": ("ncclgen.cli.k8s", "k8s", "Render Kubernetes manifests (PyTorchJob, RayJob, TrainJob)."),
    "discover": ("ncclgen.cli.node", "discover", "Write a descriptor for this node (NVML + sysfs)."),
    "doctor": ("ncclgen.cli.node", "doctor", "Check this node against a descriptor."),
    "bench": ("ncclgen.cli.node", "bench", "Measure collective bus bandwidth (run under torchrun)."),
    "monitor": ("ncclgen.cli.node", "monitor", "Sample GPU utilisation through NVML."),
    "init": ("ncclgen.cli.init", "init", "Scaffold a cluster repository."),
    "diff": ("ncclgen.cli.diff", "diff", "Show how the env changes between tiers or descriptors."),
    "triage": ("ncclgen.cli.triage", "triage", "Name a failed job's first failure, its cause and fix, from its logs."),
}

EPILOG = """\b
Examples:
  ncclgen clusters list
  ncclgen clusters show h100-ib
  ncclgen explain --cluster h100-ib --tier 3
  ncclgen slurm --cluster h100-ib --tier 3 > job.sh
  ncclgen k8s --cluster h100-ib --tier 2 | kubectl apply -f -
  ncclgen lint --cluster h100-ib examples/seed-article.env

\b
Shell completion (bash; use zsh_source / fish_source for other shells):
  eval "$(_NCCLGEN_COMPLETE=bash_source ncclgen)"
"""


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[name]
        return getattr(importlib.import_module(module), attr)

    def resolve_command(self, ctx, args):
        """click's, with "did you mean" for a mistyped command (`ncclgen slurmm`): the group is lazy, so
        click's own suggestion has no command list to draw on."""
        name = click.utils.make_str(args[0])
        if name in COMMANDS or name.startswith("-"):
            return super().resolve_command(ctx, args)
        from ..errors import did_you_mean

        raise click.UsageError(f"no such command {name!r}{did_you_mean(name, COMMANDS)}; see `ncclgen --help`", ctx)

    def format_commands(self, ctx, formatter):
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(
    cls=LazyGroup, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, "--version", prog_name="ncclgen")
def cli():
    """Generate NCCL/PyTorch environment, NUMA binding and launch lines for Slurm and Kubernetes
    from version-controlled cluster descriptors and three cumulative tiers of rules."""


def _check_args(args: list[str]) -> None:
    """Refuse arguments that are not UTF-8 text (Python hands them over as lone surrogates).

    Such a value cannot be written into a script, a manifest or an error line unchanged, so it would
    either crash the writer or reach the job altered.
    """
    for i, arg in enumerate(args, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as exc:
            shown = arg.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
            raise UserError(f"argument {i} ({shown}) is not UTF-8 text (byte {exc.start})") from None


def main(argv: list[str] | None = None) -> int:
    """Entry point: bad input is one line on stderr and exit status 2, never a traceback."""
    try:
        _check_args(sys.argv[1:] if argv is None else argv)
        rv = cli.main(args=argv, prog_name="ncclgen", standalone_mode=False)
    except UserError as exc:
        click.echo("\n".join(error_lines(exc)), err=True)  # one line per problem
        return 2
    except click.exceptions.Abort:
        click.echo("ncclgen: aborted", err=True)
        return 130
    except click.exceptions.NoArgsIsHelpError as exc:  # `ncclgen` or a group alone: its help, as printed by -h
        click.echo(exc.ctx.get_help(), err=True)
        return 2
    except click.UsageError as exc:
        msg = exc.format_message().replace("\n", " ")
        # A subcommand's path says where (`ncclgen clusters: ...`); the root's would repeat "ncclgen: ".
        where = f"{exc.ctx.command_path}: " if exc.ctx and exc.ctx.parent else ""
        click.echo(printable(f"ncclgen: error: {where}{msg}"), err=True)  # click quotes the raw argument
        return 2
    except click.ClickException as exc:
        click.echo(printable(f"ncclgen: error: {exc.format_message()}").replace("\\n", " "), err=True)
        return exc.exit_code
    except BrokenPipeError:  # `ncclgen ... | head`
        sys.stderr.close()
        return 0
    return rv if isinstance(rv, int) else 0


def run() -> NoReturn:
    """The console script: `ncclgen` runs in submission wrappers and CI loops, so start-up and exit are
    most of its time (benchmarks/README.md). A process this short gains little from the cyclic garbage
    collector's passes over the objects it builds (fewer passes: 4-7 ms of a 100 ms render) and nothing from
    tearing the interpreter down at the end (_leave)."""
    gc.set_threshold(50_000, 20, 100)  # CPython's default first threshold is 700 allocations
    _utf8_mode()
    _utf8_stdout()
    _leave(main())


def _leave(status: int) -> NoReturn:
    """Exit without the interpreter's teardown (freeing every module and object: 15 ms of a 130 ms
    render), as mypy's util.hard_exit does: flush what was written, run the exit handlers, then end.
    Commands write their files inside `with` blocks, so nothing is left in a buffer but stdout's and
    stderr's."""
    import atexit
    import contextlib
    import os

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError, ValueError):  # `| head` closed the pipe; a stream closed
            stream.flush()
    atexit._run_exitfuncs()
    os._exit(status)


def _utf8_stdout() -> None:
    """Scripts and manifests are UTF-8 whatever PYTHONIOENCODING says (ascii, latin-1 would end a non-ASCII
    value in a UnicodeEncodeError traceback); error lines on stderr keep Python's backslash escapes."""
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("_", "-")
    if encoding not in ("utf-8", "utf8") and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(encoding="utf-8")
    if hasattr(sys.stderr, "reconfigure"):
        sys.stderr.reconfigure(errors="backslashreplace")


def _utf8_mode() -> None:
    """Run in Python's UTF-8 mode (PEP 540) whatever the locale, so the same command gives the same
    output or the same error under LANG=C, LC_ALL=POSIX and PYTHONUTF8=0 as under a UTF-8 locale.

    Under a non-UTF-8 locale Python decodes argv, paths and stdout as ASCII: a UTF-8 `-- ARG` or
    --set-unchecked value arrives as lone surrogates, refused as "not UTF-8 text", and a non-ASCII
    character written to stdout ends in a UnicodeEncodeError. Re-executing with `-X utf8` (the
    command-line switch wins over PYTHONUTF8=0) hands the program the bytes the shell passed, decoded
    as UTF-8; bytes that are not UTF-8 are still refused by _check_args, in every locale alike.
    """
    if sys.flags.utf8_mode or not sys.executable or sys.getfilesystemencoding().lower() in ("utf-8", "utf8"):
        return
    import os

    argv = [sys.executable, "-X", "utf8", "-m", "ncclgen", *sys.argv[1:]]
    try:
        sys.stdout.flush()
        os.execv(sys.executable, argv)
    except OSError:  # no interpreter to re-run (an embedded or frozen one): carry on in this locale
        return
