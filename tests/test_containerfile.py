"""The Containerfile keeps the rules a platform team relies on (docs/deploy.md, "The image"): the
base image is a build argument every stage uses, the app runs as a non-root user, torch is the
pinned CPU build, the embedding model is in the image (nothing fetched at run time), and the
container has a readiness check. The image itself is built and run by hand (docs/deploy.md has
the commands and what was measured); this reads the file a build would read."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CONTAINERFILE = REPO / "Containerfile"


def instructions(source: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per instruction: continuation lines joined, comments dropped."""
    out, pending = [], ""
    for raw in source.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):  # a comment inside a continued instruction
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        word, _, rest = full.partition(" ")
        out.append((word.upper(), rest.strip()))
    assert not pending, "the file ends inside a continued instruction"
    return out


@pytest.fixture(scope="module")
def steps() -> list[tuple[str, str]]:
    return instructions(CONTAINERFILE.read_text())


def _stages(steps):
    stages: list[list[tuple[str, str]]] = []
    for word, rest in steps:
        if word == "FROM":
            stages.append([])
        if stages:
            stages[-1].append((word, rest))
    return stages


def test_the_base_image_is_a_build_argument_every_stage_starts_from(steps):
    args_before_from = []
    for word, rest in steps:
        if word == "FROM":
            break
        if word == "ARG":
            args_before_from.append(rest.split("=", 1)[0])
    assert "BASE" in args_before_from
    froms = [rest for word, rest in steps if word == "FROM"]
    assert froms, "no FROM"
    assert all(re.match(r"\$\{?BASE\}?(\s|$)", f) for f in froms), froms


def test_the_final_stage_runs_as_a_non_root_user(steps):
    final = _stages(steps)[-1]
    users = [rest for word, rest in final if word == "USER"]
    assert users, "the final stage sets no USER: the app would run as root"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0"), users
    # No instruction after the last USER switches back.
    last = max(i for i, (word, _) in enumerate(final) if word == "USER")
    assert all(word != "USER" for word, _ in final[last + 1:])
    # That user exists in the image: created by name or uid in the same stage.
    assert any(word == "RUN" and "useradd" in rest and user in rest for word, rest in final), user


def test_torch_is_the_pinned_cpu_build_installed_before_the_app(steps):
    runs = [rest for word, rest in steps if word == "RUN"]
    torch_runs = [i for i, r in enumerate(runs) if re.search(r"\btorch==", r)]
    assert torch_runs, "torch is not pinned"
    pins = {m for r in runs for m in re.findall(r"\btorch==(\S+)", r)}
    assert pins == {"2.13.0+cpu"}, pins  # the CPU build: an unpinned torch pulls CUDA
    app = [i for i, r in enumerate(runs) if re.search(r"pip install\b.*\s/src\b", r)]
    assert app and min(torch_runs) < min(app)  # already satisfied when the app's dependencies resolve
    constraints = (REPO / "deploy" / "constraints.txt").read_text()
    assert re.search(r"^torch==2\.13\.0\+cpu$", constraints, re.M)
    assert not re.search(r"^nvidia-", constraints, re.M)  # no CUDA runtime wheels


def test_the_model_is_in_the_image_and_nothing_is_fetched_at_run_time(steps):
    final = _stages(steps)[-1]
    env = " ".join(rest for word, rest in final if word == "ENV")
    assert re.search(r"\bHF_HUB_OFFLINE=1\b", env) and re.search(r"\bTRANSFORMERS_OFFLINE=1\b", env)
    models = re.search(r"\bPOLICYDESK_EMBED_MODELS_DIR=(\S+)", env)
    assert models, "the ONNX file's directory is not set: workers would export it at start"
    # The build stage exports it into that directory, and the final stage copies it in.
    build_runs = " ".join(rest for stage in _stages(steps)[:-1] for word, rest in stage if word == "RUN")
    assert f"POLICYDESK_EMBED_MODELS_DIR={models.group(1)}" in build_runs
    copies = [rest for word, rest in final if word == "COPY"]
    assert any(models.group(1).startswith(c.split()[-1].rstrip("/")) for c in copies if "--from=" in c), copies
    # What runs when the container starts fetches nothing.
    at_start = " ".join(rest for word, rest in final if word in ("CMD", "ENTRYPOINT", "HEALTHCHECK"))
    assert not re.search(r"\b(curl|wget|pip|huggingface-cli|snapshot_download|git clone)\b", at_start), at_start
    assert "--from=" not in " ".join(rest for word, rest in final if word == "RUN")


def test_the_container_has_a_readiness_check_on_readyz_and_serves(steps):
    final = _stages(steps)[-1]
    checks = [rest for word, rest in final if word == "HEALTHCHECK"]
    assert checks and "/readyz" in checks[-1], checks
    assert "NONE" not in checks[-1].split()
    cmd = [rest for word, rest in final if word == "CMD"][-1]
    argv = __import__("json").loads(cmd) if cmd.startswith("[") else shlex.split(cmd)
    assert argv[:2] == ["policydesk", "serve"], argv
    host = argv[argv.index("--host") + 1]
    port = argv[argv.index("--port") + 1]
    assert host == "0.0.0.0"  # reachable from outside the container's own loopback
    assert f":{port}/readyz" in checks[-1]  # the check probes the port serve listens on
    assert port in " ".join(rest for word, rest in final if word == "EXPOSE").split()


def test_the_build_context_leaves_out_local_state():
    """No virtualenv, data directory (an embedded cluster, traces) or .env goes into the image."""
    ignore = [line.strip() for line in (REPO / ".containerignore").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert ignore[0] == "*"  # everything is left out unless named
    named = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    assert not any(n.startswith((".venv", ".policydesk", ".env", "tests", "corpus")) for n in named), named
    copied = {source for word, rest in instructions(CONTAINERFILE.read_text()) if word == "COPY"
              and "--from=" not in rest for source in rest.split()[:-1]}
    for source in copied:
        assert source.rstrip("/") in named, f"COPY {source} is left out of the build context"


def test_the_parser_reads_continuations_and_comments():
    parsed = instructions("# c\nARG BASE=x\nFROM ${BASE} AS b\nRUN a \\\n  # note\n  && b\nUSER 10\n")
    assert parsed == [("ARG", "BASE=x"), ("FROM", "${BASE} AS b"), ("RUN", "a  && b"), ("USER", "10")]


def test_every_data_file_the_code_reads_is_installed_with_the_package():
    """The image installs the package from its files, not the checkout: a data file under
    policydesk/ that no package-data pattern names is missing there. Built and run here, the pod
    answered every question with 'could not answer: FileNotFoundError' until the file was copied in."""
    import tomllib

    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["policydesk"]
    root = REPO / "policydesk"
    packaged = {p for pattern in patterns for p in root.glob(pattern) if p.is_file()}
    data = {p for p in root.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")
            and "__pycache__" not in p.parts}
    missing = sorted(str(p.relative_to(REPO)) for p in data - packaged)
    assert not missing, missing
