"""Without pettingzoo or Ray, the layers say how to install them; the core is untouched."""

import subprocess
import sys


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_marl_without_pettingzoo_says_how_to_install_it() -> None:
    res = _run("import sys; sys.modules['pettingzoo'] = None; import evgrid_marl")
    assert res.returncode == 1
    assert "pip install 'ev-grid-oracle[marl]'" in res.stderr


def test_ray_runner_without_ray_says_how_to_install_it() -> None:
    res = _run(
        "import sys; sys.modules['ray'] = None\n"
        "from evaluation.ray_compare import ray_start\n"
        "ray_start()"
    )
    assert res.returncode == 1 and "ev-grid-oracle[rl]" in res.stderr


def test_importing_the_layers_loads_no_ray_or_torch() -> None:
    res = _run(
        "import sys, evgrid_rl, evaluation.ray_compare, training.ray_labels, evgrid_rl.policy\n"
        "import evgrid_marl\n"
        "import evgrid_rl.mappo\n"
        "print(sorted(m for m in ('ray', 'torch') if m in sys.modules))"
    )
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stderr
