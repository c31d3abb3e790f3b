"""The engine packages must stay usable without Django: importing them must not import it."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("package", ["policies_app.rego", "policies_app.iac"])
def test_the_engine_package_imports_nothing_from_django(package):
    modules = sorted(
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for path in (ROOT / package.replace(".", "/")).rglob("*.py")
        if path.name != "__main__.py"
    )
    assert modules, f"{package} has no modules"
    probe = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "leaked = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "print(','.join(leaked))\n"
    )
    # Importing policies_app.X runs policies_app/__init__.py, which is empty on purpose; check it stays so.
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"{package} imported {result.stdout.strip()}"
