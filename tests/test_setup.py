"""The set-up scripts as a fresh Debian 12 machine meets them.

Debian's own Python (3.11.2) refuses `pip install` into the system (PEP 668), so
`scripts/setup.sh` must put everything into the project's `.venv/`; and long steps
must say that they run.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bash(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_a_long_step_says_it_started_beats_and_finishes(tmp_path):
    res = _bash(
        f'. scripts/heartbeat.sh; run_logged "slow step" {tmp_path}/log sleep 3',
        HEARTBEAT_S="1",
    )
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert "slow step: started" in lines[0]
    assert sum("slow step: still running" in line for line in lines) >= 2
    assert "slow step: done in" in lines[-1]


def test_a_failed_long_step_shows_its_log_and_fails(tmp_path):
    res = _bash(
        f'. scripts/heartbeat.sh; run_logged "bad step" {tmp_path}/log '
        "bash -c 'echo the reason it broke; exit 3'; echo after=$?"
    )
    assert "after=1" in res.stdout
    assert "bad step: FAILED" in res.stderr and "the reason it broke" in res.stderr


def test_the_setup_script_rejects_an_unknown_mode():
    res = _bash("bash scripts/setup.sh nonsense")
    assert res.returncode == 2 and "usage" in res.stderr


@pytest.mark.slow
def test_setup_installs_into_a_venv_never_into_the_system_python(tmp_path):
    """Run `scripts/setup.sh` (main mode) in a copy of the project with a 'system'
    Python that refuses pip installs as Debian 12's does; it must still succeed,
    and the city view's imports must work from the venv it made."""
    repo = tmp_path / "repo"
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in files:
        src = ROOT / name
        if src.is_file() and not name.startswith(("docs/", "recordings/")):
            dst = repo / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    log = tmp_path / "calls.log"
    fake = tmp_path / "bin" / "python3"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {log}\n'
        'case "$*" in *"-m pip install"*)\n'
        "  echo 'error: externally-managed-environment' >&2; exit 1;;\n"
        "esac\n"
        f'exec {sys.executable} "$@"\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    res = subprocess.run(
        ["bash", "scripts/setup.sh"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHON": str(fake)},
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "pip install" not in log.read_text()  # the 'system' was never asked
    venv_py = repo / ".venv" / "bin" / "python"
    check = subprocess.run(
        [str(venv_py), "-c", "import evgrid_core, viz.app, pygame, imageio_ffmpeg"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, check.stderr


def test_a_python_below_the_floor_is_refused_before_anything_is_made(tmp_path):
    old = tmp_path / "python3"
    old.write_text(
        '#!/bin/sh\ncase "$1" in --version) echo "Python 3.10.12";; *) exit 1;; esac\n'
    )
    old.chmod(old.stat().st_mode | stat.S_IEXEC)
    res = _bash("bash scripts/setup.sh", PYTHON=str(old))
    assert res.returncode == 1
    assert "Python 3.10.12 is too old; Python 3.11.2 or newer" in res.stderr
