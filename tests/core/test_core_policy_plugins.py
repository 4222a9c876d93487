"""Policies above the core register through the ``evgrid.policies`` entry points:
a dummy plugin in a few lines, a broken one skipped with its reason, the Oracle's
row found installed or not."""

import sys
from pathlib import Path

import pytest

from evgrid_core import plugins as plugins_module
from evgrid_core import policies
from evgrid_core.policies import Plugin, load_plugins, make_policy, policy_names

DUMMY = """
from evgrid_core.baselines import GreedyETA
from evgrid_core.policies import register_policy

class Dummy(GreedyETA):
    name = "dummy"

register_policy("dummy", Dummy, "greedy_eta by another name")
"""


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Install plugins as a distribution on sys.path: {name: module source}."""
    # The real plugins first, into the real registry: a module imported while the
    # copy below is in place would not register again once it is gone.
    load_plugins()
    monkeypatch.setattr(policies, "_REGISTRY", dict(policies._REGISTRY))
    monkeypatch.setattr(policies, "_DESCRIPTIONS", dict(policies._DESCRIPTIONS))
    monkeypatch.setattr(policies, "_plugins", None)
    modules: list[str] = []

    def install(sources: dict[str, str]) -> None:
        dist = tmp_path / "evgrid_test_plugins-0.1.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: evgrid-test-plugins\nVersion: 0.1\n"
        )
        rows = "".join(f"{n} = evgrid_test_{n}\n" for n in sources)
        (dist / "entry_points.txt").write_text(f"[evgrid.policies]\n{rows}")
        for name, source in sources.items():
            (tmp_path / f"evgrid_test_{name}.py").write_text(source)
            modules.append(f"evgrid_test_{name}")
        monkeypatch.syspath_prepend(tmp_path)

    yield install
    for m in modules:
        sys.modules.pop(m, None)


def test_a_plugin_is_one_module_and_one_entry_point(plugins) -> None:
    plugins({"dummy": DUMMY})
    policy = make_policy("dummy")  # an unknown name loads the plugins
    assert type(policy).__name__ == "Dummy" and policy.name == "dummy"
    assert "dummy" in policy_names()
    assert policies.describe_policy("dummy") == "greedy_eta by another name"
    assert Plugin("dummy", "evgrid_test_dummy") in load_plugins()


def test_a_plugin_that_cannot_import_is_skipped_and_named(plugins) -> None:
    plugins({"broken": "import evgrid_no_such_package\n", "dummy": DUMMY})
    reason = "ModuleNotFoundError: No module named 'evgrid_no_such_package'"
    assert Plugin("broken", "evgrid_test_broken", reason) in load_plugins()
    assert "dummy" in policy_names()  # the others still load
    with pytest.raises(ValueError, match=r"plugin broken \(evgrid_test_broken\) not"):
        make_policy("broken")


def test_the_core_own_policies_load_no_plugin(plugins) -> None:
    plugins({"dummy": DUMMY})
    make_policy("greedy_eta")
    assert policies._plugins is None and "evgrid_test_dummy" not in sys.modules


def test_the_oracle_is_found_installed_or_from_the_checkout(monkeypatch) -> None:
    assert policies.plugin_modules()["oracle"] == "oracle.policy"
    # a checkout not reinstalled since the row was added: pyproject.toml is read
    monkeypatch.setattr(plugins_module, "entry_points", lambda group: [])
    assert policies.plugin_modules()["oracle"] == "oracle.policy"
