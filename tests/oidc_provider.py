"""A real OpenID provider for the single sign-on tests: the npm package oidc-provider (tests/oidc/,
pinned by package-lock.json) run under node, configured by a JSON file this module writes. bin/run-tests
installs the package with npm; without node (or npm and the package) the tests are skipped, saying so."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parent / "oidc"
CLIENT_ID = "policy-platform"
CLIENT_SECRET = "test-only-client-secret"


def require_provider() -> str:
    """The node executable, after making sure the package is installed; skips the test otherwise."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("needs node (v20) to run the OpenID provider oidc-provider (tests/oidc/)")
    if not (FOLDER / "node_modules" / "oidc-provider").is_dir():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("needs npm to install oidc-provider into tests/oidc/ (bin/run-tests does)")
        installed = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=FOLDER, capture_output=True, text=True, timeout=300
        )
        if installed.returncode != 0:
            pytest.skip(f"could not install oidc-provider with npm: {installed.stderr[-500:]}")
    return node


@dataclass
class Provider:
    issuer: str
    config_path: Path
    config: dict

    def set_groups(self, login: str, groups: list[str]) -> None:
        self.config["accounts"][login]["groups"] = groups
        self.config_path.write_text(json.dumps(self.config))


@contextmanager
def running_provider(tmp_path: Path, site: str, accounts: dict) -> Iterator[Provider]:
    node = require_provider()
    config = {
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "redirect_uris": [f"{site}/oidc/callback/"],
        "post_logout_redirect_uris": [f"{site}/accounts/login/"],
        "accounts": accounts,
    }
    path = tmp_path / "oidc-provider.json"
    path.write_text(json.dumps(config))
    process = subprocess.Popen(
        [node, str(FOLDER / "provider.mjs"), str(path)],
        cwd=FOLDER,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = process.stdout.readline() if process.stdout else ""
        if not line.startswith("listening "):
            pytest.fail(f"the OpenID provider did not start: {line!r}")
        yield Provider(line.split()[1], path, config)
    finally:
        process.terminate()
        process.wait(timeout=10)
