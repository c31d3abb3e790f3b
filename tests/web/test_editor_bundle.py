"""The policy editor's committed bundle (policies_app/static/policies_app/editor/, built by bin/build-editor)
is the one frontend/editor/package-lock.json pins: every package its header names is at the lock's version,
every CodeMirror package the editor depends on is in it, every dependency is pinned exactly, and each
bundled package's licence ships beside it. No node needed: the files are read as text."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "frontend" / "editor"
BUILT = ROOT / "policies_app" / "static" / "policies_app" / "editor"
HEADER = re.compile(r"^/\*! policy editor bundle: (?P<packages>.+) \*/$")


def bundled() -> dict[str, str]:
    first_line = (BUILT / "editor.js").read_text().split("\n", 1)[0]
    match = HEADER.match(first_line)
    assert match, f"editor.js does not start with the build's header: {first_line[:120]!r}"
    return dict(entry.rsplit("@", 1) for entry in match["packages"].split())


def test_the_bundle_holds_the_versions_the_lock_pins():
    lock = json.loads((SOURCE / "package-lock.json").read_text())["packages"]
    packages = bundled()
    assert packages, "the header names no package"
    for name, version in packages.items():
        assert f"node_modules/{name}" in lock, f"{name} is bundled but not in package-lock.json"
        pinned = lock[f"node_modules/{name}"]["version"]
        assert version == pinned, f"{name}: bundled {version}, the lock pins {pinned}: run bin/build-editor"


def test_every_dependency_is_pinned_exactly_and_bundled():
    manifest = json.loads((SOURCE / "package.json").read_text())
    lock = json.loads((SOURCE / "package-lock.json").read_text())["packages"]
    packages = bundled()
    for name, wanted in manifest["devDependencies"].items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", wanted), f"{name} is not pinned to one version: {wanted}"
        assert lock[f"node_modules/{name}"]["version"] == wanted, f"{name}: package.json and the lock differ"
        if name != "esbuild":  # the build tool, not bundled
            assert packages.get(name) == wanted, f"{name} {wanted} is not in the built bundle"


def test_each_bundled_package_ships_its_licence():
    for name in bundled():
        licence = BUILT / "licenses" / f"{name.replace('/', '__')}.txt"
        assert licence.is_file(), f"no licence for {name} in {licence.parent}"
        assert "Permission is hereby granted" in licence.read_text(), f"{name}: not the MIT text"
    assert (BUILT / "editor.css").is_file()
