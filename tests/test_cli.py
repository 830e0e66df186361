"""Command-line behaviour that needs no running database."""

import os
import subprocess
import sys

import pytest

CLI = os.path.join(os.path.dirname(sys.executable), "policydesk")


@pytest.mark.parametrize("args", [["users", "list"], ["ask", "What is the timely filing limit?", "--as", "rep", "--json"]])
def test_database_outage_is_a_clear_error_not_a_traceback(args, tmp_path):
    # Regression: with Postgres down the CLI printed a SQLAlchemy traceback.
    env = dict(os.environ, DATABASE_URL=f"postgresql://nobody@/policydesk?host={tmp_path}/no-such-socket")
    out = subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 3
    assert "the database is unavailable" in out.stderr and "nothing was changed" in out.stderr
    assert "Traceback" not in out.stderr + out.stdout


def test_purge_refuses_zero_days():
    out = subprocess.run([CLI, "traces", "purge", "--older-than", "0"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--older-than must be a positive number of days" in out.stderr
