"""Without gymnasium, importing the wrapper fails with an install hint."""

import subprocess
import sys


def test_import_without_gymnasium_says_how_to_install_it() -> None:
    code = "import sys; sys.modules['gymnasium'] = None; import evgrid_gym"  # blocked
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 1
    assert "DependencyNotInstalled: the Gymnasium wrapper needs gymnasium" in res.stderr
    assert "pip install 'ev-grid-oracle[gym]'" in res.stderr
