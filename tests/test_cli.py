"""Command-line behaviour that needs no running database."""

import os
import subprocess
import sys

import pytest

from tests.cli_helpers import run_cli

CLI = os.path.join(os.path.dirname(sys.executable), "policydesk")


@pytest.mark.parametrize("args,process", [(["users", "list"], True),
                                          (["ask", "What is the timely filing limit?", "--as", "rep", "--json"], False)])
def test_database_outage_is_a_clear_error_not_a_traceback(args, process, tmp_path):
    # Regression: with Postgres down the CLI printed a SQLAlchemy traceback. The first case runs the
    # real console script (the process boundary), the second the same command line in this process.
    env = dict(os.environ, DATABASE_URL=f"postgresql://nobody@/policydesk?host={tmp_path}/no-such-socket")
    if process:
        out = subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=120)
    else:
        out = run_cli(*args, env=env)
    assert out.returncode == 3
    assert "the database is unavailable" in out.stderr and "nothing was changed" in out.stderr
    assert "Traceback" not in out.stderr + out.stdout


def test_purge_refuses_zero_days():
    out = run_cli("traces", "purge", "--older-than", "0")
    assert out.returncode == 2 and "--older-than must be a positive number of days" in out.stderr
