"""The file sandbox, Django side: where a template's files may come from, where they are for one
evaluation, and what of the server's paths a user may see.

- A template's source is a remote git repository or an uploaded archive. A directory of this server
  (a path, a local git repository, a ``file://`` URL) only under a root listed in the setting
  ``LOCAL_REPOSITORY_ROOTS`` (default: none), and never the platform's own code, data, caches or
  database, even under a listed root. A refused path gets one answer whether or not it exists.
- Each source is its own root (one commit's checkout, one archive's files, the listed directory);
  the evaluation reads nothing outside it. That enforcement runs inside the framework-free evaluator
  (iac/file_sandbox.py, which this module hands the settings).
- Messages that reach users (configuration view diagnostics, template source errors, failed
  evaluations) name no directory of the server: ``scrub_server_paths``.

``refusal_to_read_repository`` is the one check of a local path, meant for policy repositories too (the
same setting).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from policies_app.errors import Invalid
from policies_app.guards import egress
from policies_app.iac.file_sandbox import LocalRoots, local_location, scrub
from policies_app.iac.sources import (
    TemplateSourceError,
    checkout_template,
    relative_template_path,
    template_directory,
)
from policies_app.iac.template_archives import extract_archive

if TYPE_CHECKING:
    from policies_app.models import Template


def _platform_paths() -> list[tuple[str, str]]:
    """The platform's own files, each with how a message names it instead (most specific first)."""
    named = [
        (settings.TEMPLATE_CHECKOUT_DIR, "(template cache)"),
        (settings.IAC_PARSE_CACHE_DIR, "(parse cache)"),
        (settings.POLICY_REPOSITORY_CACHE_DIR, "(policy repository cache)"),
        (settings.MEDIA_ROOT, "(uploads)"),
        (settings.STATIC_ROOT, "(static files)"),
        (settings.VAR_DIR, "(platform data)"),
        (settings.BASE_DIR, "(platform)"),
    ]
    database = settings.DATABASES["default"]
    if database["ENGINE"].endswith("sqlite3") and str(database["NAME"]) not in ("", ":memory:"):
        named.append((database["NAME"], "(database)"))
    return [(str(path), label) for path, label in named if path]


def local_roots() -> LocalRoots:
    """The local directories a source may lie in (the operator's list) and the platform's own files,
    which no source may hold or lie in."""
    return LocalRoots(
        allowed=tuple(settings.LOCAL_REPOSITORY_ROOTS),
        forbidden=tuple(path for path, _label in _platform_paths()),
    )


def refusal_to_read_repository(repository: str) -> str | None:
    """Why ``repository`` names a directory of this server that may not be read, or None (a remote URL
    is the egress guard's to judge; a local path under a listed root may be read)."""
    local = local_location(repository)
    return None if local is None else local_roots().refusal(local)


def require_template_source(fields: dict[str, Any]) -> None:
    """Invalid (400, naming the field) when a template's ``repository`` or ``path`` would read outside
    its own files: a local directory outside the listed roots, an absolute path or one with '..'."""
    errors: dict[str, list[str]] = {}
    repository = fields.get("repository") or ""
    refusal = refusal_to_read_repository(repository) if repository else None
    if refusal is not None:
        errors["repository"] = [refusal]
    if "path" in fields:
        try:
            relative_template_path(fields["path"] or "")
        except TemplateSourceError as problem:
            errors["path"] = [str(problem)]
    if errors:
        raise Invalid(errors)


@dataclass(frozen=True)
class TemplateFiles:
    directory: str  # the template's path inside its source
    root: str  # the source root: everything the evaluation may read
    commit: str  # the commit read; "" for an archive or a plain directory


def template_files(template: Template, revision: str | None) -> TemplateFiles:
    """The template's files on this host: its uploaded archive unpacked, else its repository checked out
    at ``revision``. TemplateSourceError, with a message fit to show, when they cannot be provided."""
    try:
        if template.archive:
            with template.archive.open("rb") as archive:
                root = extract_archive(archive.read(), settings.TEMPLATE_CHECKOUT_DIR)
            what = f"path {template.path!r} in the uploaded archive"
            return TemplateFiles(template_directory(root, template.path, what), root, "")
        checkout = checkout_template(
            template.repository,
            revision,
            template.path,
            settings.TEMPLATE_CHECKOUT_DIR,
            local_roots=local_roots(),
            route=egress.git_route,
        )
        return TemplateFiles(checkout.directory, checkout.root, checkout.commit or "")
    except (TemplateSourceError, OSError) as problem:
        raise TemplateSourceError(scrub_server_paths(str(problem))) from None


def scrub_server_paths(text: str) -> str:
    """``text`` with every path under the platform's directories (and the Python installation's, the
    server account's home) replaced by a label: what an error may say to a user."""
    named = [
        *_platform_paths(),
        (sys.prefix, "(python)"),
        (sys.base_prefix, "(python)"),
        (os.path.expanduser("~"), "(server home)"),
    ]
    # Longest first, so that a cache inside the data directory keeps its own label.
    for path, label in sorted(named, key=lambda pair: len(str(Path(pair[0]).resolve())), reverse=True):
        if os.path.normpath(path) != os.sep:
            text = scrub(text, path, label)
    return text


def scrubbed_configuration(view: dict[str, Any]) -> dict[str, Any]:
    """A configuration view whose diagnostics name no directory of the server (views evaluated and kept
    before diagnostics were made relative included)."""
    diagnostics = []
    for diagnostic in view.get("diagnostics", []):
        diagnostic = dict(diagnostic)
        for key in ("summary", "detail", "file"):
            if isinstance(diagnostic.get(key), str):
                diagnostic[key] = scrub_server_paths(diagnostic[key])
        diagnostics.append(diagnostic)
    return {**view, "diagnostics": diagnostics}
