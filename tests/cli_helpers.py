"""The `policydesk` command line run inside the test process, as a cold process would run it.

A cold `policydesk` process pays Python's imports, the model load and a new embedded-server
handle each time (2-10 s on two shared cores); ~60 call sites did that. `run_cli` calls the same
Typer app with the same arguments and environment, and returns what `subprocess.run(...,
capture_output=True, text=True)` returned: `returncode`, `stdout`, `stderr`. What stays
process-wide is put back afterwards: the environment, the logging configuration the command's
callback installs (JSON lines on stderr, policydesk/ops/logs.py) and any embedded server the command
started (a process that exits gives its handle back; stopping it here does the same).

An exception the command does not handle becomes exit code 1 with its traceback on stderr, as
Python prints it. A few tests keep a real process on purpose, where the process boundary is what
they prove (the console script's start-up, `serve`, a fresh interpreter's imports): `CLI` is its path.
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import traceback
import warnings
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

CLI = str(Path(sys.executable).parent / "policydesk")


def run_cli(*args: str, env: dict | None = None, input: str | None = None, cwd: str | Path | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess:
    """`policydesk ARGS` in this process, under `env` (the whole environment, as `subprocess.run`
    takes it; default: this process's) and in `cwd`. `timeout` is accepted for symmetry and ignored."""
    import click
    import typer

    from policydesk.cli import app
    from policydesk.storage import engine

    from policydesk import config

    argv = [str(a) for a in args]
    command = typer.main.get_command(app)
    out, err = io.StringIO(), io.StringIO()
    servers_before = set(engine._embedded_servers)
    code = 0
    _forget_settings(config)  # read from this environment, as a new process would
    with _environment(env), _directory(cwd), _logging_restored(), redirect_stdout(out), redirect_stderr(err), \
            _stdin(input):
        try:
            command.main(args=argv, prog_name="policydesk", standalone_mode=True)
        except SystemExit as exc:
            code = _exit_code(exc.code, err)
        except click.exceptions.Exit as exc:  # pragma: no cover - standalone_mode turns it into SystemExit
            code = exc.exit_code
        except BaseException:  # noqa: BLE001 - what an interpreter does with an unhandled exception
            if sys.exc_info()[0] is KeyboardInterrupt:
                raise
            err.write(traceback.format_exc())
            code = 1
        finally:
            _stop_new_servers(engine, servers_before)
            _forget_settings(config)
    return subprocess.CompletedProcess(["policydesk", *argv], code, out.getvalue(), err.getvalue())


def _forget_settings(config) -> None:
    clear = getattr(config.get_settings, "cache_clear", None)  # get_settings is memoized per process
    if clear is not None:
        clear()


def _exit_code(code, err: io.StringIO) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    err.write(f"{code}\n")  # sys.exit("message"): printed, status 1
    return 1


def _stop_new_servers(engine, before: set) -> None:
    """Give back the handles of embedded servers this command started, as its process exit would."""
    for pgdata in set(engine._embedded_servers) - before:
        server = engine._embedded_servers.pop(pgdata)
        try:
            server.cleanup()
        except Exception:  # noqa: BLE001 - a server the command itself stopped
            pass


@contextmanager
def _environment(env: dict | None):
    """`env` as the whole environment (None: this process's), and whatever the command sets in it
    (`serve` names its metrics directory there) undone afterwards."""
    saved = dict(os.environ)
    if env is not None:
        os.environ.clear()
        os.environ.update({k: str(v) for k, v in env.items()})
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextmanager
def _directory(cwd):
    if cwd is None:
        yield
        return
    saved = os.getcwd()
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved)


@contextmanager
def _stdin(text: str | None):
    saved = sys.stdin
    sys.stdin = io.StringIO(text or "")
    try:
        yield
    finally:
        sys.stdin = saved


@contextmanager
def _logging_restored():
    """The command's callback runs logging.config.dictConfig (handlers bound to the captured
    stderr) and logging.captureWarnings: both are undone afterwards."""
    manager = logging.root.manager
    loggers = [logging.root] + [lg for lg in manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    saved = {id(lg): (lg, lg.level, list(lg.handlers), list(lg.filters), lg.propagate, lg.disabled)
             for lg in loggers}
    showwarning = warnings.showwarning
    captured = logging._warnings_showwarning is not None  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for lg in [logging.root] + [lg for lg in manager.loggerDict.values() if isinstance(lg, logging.Logger)]:
            if id(lg) in saved:
                _, level, handlers, filters, propagate, disabled = saved[id(lg)]
                lg.setLevel(level)
                lg.handlers[:] = handlers
                lg.filters[:] = filters
                lg.propagate, lg.disabled = propagate, disabled
            else:  # a logger first made by the command: without the handlers the command's logging set-up gave it
                lg.handlers[:] = [h for h in lg.handlers if not isinstance(h, logging.StreamHandler)]
                lg.setLevel(logging.NOTSET)
                lg.propagate, lg.disabled = True, False
        if not captured:
            logging.captureWarnings(False)
        warnings.showwarning = showwarning
