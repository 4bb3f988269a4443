"""What run_meta.json records of the libraries a plugin wraps (`plugins[].wraps`, in the run id):
the installed versions of its `WRAPS` distributions, or, for a library installed in an
environment of the plugin's own (a venv behind a process boundary), what its
`wrapped_versions()` says that environment holds."""

from __future__ import annotations

import sys
import types

import pytest

from memorybench.plugins import Plugin


@pytest.fixture
def module(monkeypatch):
    made = types.ModuleType("mb_wraps_probe")
    made.__file__ = __file__
    monkeypatch.setitem(sys.modules, "mb_wraps_probe", made)
    return made


def _plugin() -> Plugin:
    return Plugin(name="probe", module="mb_wraps_probe", distribution=None, version=None)


def test_wraps_names_the_installed_versions_of_its_distributions(module):
    module.WRAPS = ("pyyaml", "no-such-distribution-here")
    described = _plugin().describe()
    assert described["wraps"]["no-such-distribution-here"] is None
    assert described["wraps"]["pyyaml"]  # installed in memorybench's venv: its version


def test_a_library_in_an_environment_of_its_own_reports_its_versions(module):
    module.WRAPS = ("pyyaml",)  # its own account wins: the library is not in this venv
    module.wrapped_versions = lambda: {"zeta-lib": "2.0", "alpha-lib": "1.1.0"}
    wraps = _plugin().describe()["wraps"]
    assert wraps == {"alpha-lib": "1.1.0", "zeta-lib": "2.0"} and list(wraps) == ["alpha-lib", "zeta-lib"]
    before = _plugin().describe()
    module.wrapped_versions = lambda: {"zeta-lib": "2.1", "alpha-lib": "1.1.0"}
    assert _plugin().describe() != before  # an upgrade in that environment: another identity


def test_no_wraps_records_nothing(module):
    assert "wraps" not in _plugin().describe()
