"""Secrets stay secret: no repr, str, validation error or start-up refusal shows a secret's value.

Each secret is given a distinctive value; every text an operator or a log could see is searched
for those values.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from policydesk.config import LOCAL_SECRET_KEY, Settings

CLI = str(Path(sys.executable).parent / "policydesk")
REPO = Path(__file__).resolve().parent.parent

SECRETS = {
    "SECRET_KEY": "sk-7f3a9c1e5b2d8f4a6c0e9b7d3f1a5c8e",
    "APP_DB_PASSWORD": "dbpw-4b8d2f6a0c9e7b3d5f1a",
    "GEMINI_API_KEY": "gem-1c5e9a3f7b2d6e0a8c4f",
    "OIDC_CLIENT_SECRET": "oidc-9e3b7d1f5a2c8e6b0d4f",
    "METRICS_TOKEN": "metrics-6a0c4e8b2f9d3a7c1e5b",
}
DB_PASSWORD_IN_URL = "urlpw-2d6f0b4e8a3c7e1f9b5d"


def _values(text: str) -> list[str]:
    return [v for v in (*SECRETS.values(), DB_PASSWORD_IN_URL) if v in text]


def _settings(**overrides) -> Settings:
    return Settings(_env_file=None, DATABASE_URL=f"postgresql://owner:{DB_PASSWORD_IN_URL}@db.internal/policydesk",
                    DATABASE_REPLICA_URL=f"postgresql://owner:{DB_PASSWORD_IN_URL}@replica.internal/policydesk",
                    OIDC_ISSUER="https://idp.example", OIDC_CLIENT_ID="policydesk", **SECRETS | overrides)


def test_repr_and_str_of_settings_show_no_secret():
    settings = _settings()
    assert _values(repr(settings)) == []
    assert _values(str(settings)) == []
    assert "**********" in repr(settings)
    # ... and each is still there for the code that needs it.
    assert settings.SECRET_KEY.get_secret_value() == SECRETS["SECRET_KEY"]
    assert settings.database_url.endswith("@db.internal/policydesk")


@pytest.mark.parametrize("bad", [
    {"ENVIRONMENT": "production", "SECRET_KEY": LOCAL_SECRET_KEY},  # the model validator refuses
    {"SESSION_IDLE_MINUTES": -1},  # a field's own constraint
    {"APP_DB_PASSWORD": 12345},  # a secret of the wrong type
])
def test_a_validation_error_shows_no_secret(bad):
    with pytest.raises(ValidationError) as raised:
        _settings(**bad)
    message = str(raised.value)
    assert _values(message) == [], message
    assert "12345" not in message  # nor the rejected value itself
    assert _values(repr(raised.value)) == []


def _start(tmp_path: Path, **env) -> subprocess.CompletedProcess:
    full = dict(os.environ, POLICYDESK_DATA_DIR=str(tmp_path / "data"), HF_HUB_OFFLINE="1",
                PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
                **{f"POLICYDESK_{k}": v for k, v in env.items()})
    full.pop("DATABASE_URL", None)
    return subprocess.run([CLI, "serve", "--port", "1"], env=full, cwd=REPO, capture_output=True, text=True,
                          timeout=120)


def test_start_up_refusals_show_no_secret(tmp_path):
    # Refused by the settings validator (the shipped secret key in production): nothing else leaks.
    defaults = _start(tmp_path, ENVIRONMENT="production", **{k: v for k, v in SECRETS.items() if k != "SECRET_KEY"})
    assert defaults.returncode != 0
    assert "POLICYDESK_SECRET_KEY must be set" in defaults.stderr
    assert _values(defaults.stdout + defaults.stderr) == []
    # Refused at the security check (a key too short for production, a login that cannot connect).
    short = _start(tmp_path, ENVIRONMENT="production", **SECRETS | {"SECRET_KEY": "short-" + SECRETS["SECRET_KEY"][:20]})
    assert short.returncode != 0
    out = short.stdout + short.stderr
    assert "refusing to start" in out or "database is unavailable" in out, out[-2000:]
    assert _values(out) == [] and SECRETS["SECRET_KEY"][:20] not in out
