"""Optional packages: one error type and one wording for what to install.

Every layer that needs a package outside the core's (an extra in ``pyproject.toml``)
imports it through ``require``; a missing one raises ``DependencyNotInstalled``
(an ``ImportError``, like Gymnasium's), whose message names the feature, the package
and the extra that installs it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

DIST = "ev-grid-oracle"  # the distribution's name (pyproject.toml)


class DependencyNotInstalled(ImportError):
    """``feature`` needs ``package``, which is not installed; the extra ``extra``
    of ``pyproject.toml`` installs it."""

    def __init__(self, feature: str, package: str, extra: str, note: str = "") -> None:
        self.feature, self.package, self.extra = feature, package, extra
        super().__init__(install_hint(feature, package, extra, note), name=package)


def install_hint(feature: str, package: str, extra: str, note: str = "") -> str:
    """'<feature> needs <package>: pip install ...' with the extra named ("": a
    dependency of every install)."""
    if not extra:
        hint = (f"{feature} needs {package}, which every install of {DIST} has: "
                f"pip install '{DIST}' (in a checkout: python3 -m pip install -e .)")  # fmt: skip
    else:
        hint = (
            f"{feature} needs {package}: pip install '{DIST}[{extra}]' (in a "
            f"checkout: python3 -m pip install -e '.[{extra}]'; bash scripts/setup.sh "
            "test installs every extra)"
        )
    return f"{hint}; {note}" if note else hint


def require(
    module: str, feature: str, extra: str, *, package: str = "", note: str = ""
) -> ModuleType:
    """``importlib.import_module(module)``, or ``DependencyNotInstalled`` naming
    ``package`` (default: the module's top name) and ``extra`` (one of
    ``pyproject.toml``'s; "": a core dependency)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        name = package or module.split(".")[0]
        raise DependencyNotInstalled(
            feature, name, extra, note or f"import failed: {e}"
        ) from e
