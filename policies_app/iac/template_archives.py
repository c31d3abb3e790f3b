"""An uploaded archive of a template's files, unpacked once into its own source root.

``cache_dir/archives/<sha256 of the bytes>/`` holds the files of one archive and nothing else: it is the
source root of every template that uses those bytes, and an evaluation reads nothing outside it.
Unpacking refuses what would write or point outside that directory (absolute member names, ``..``,
links leaving it, devices and fifos) and bounds the work (members and unpacked bytes are counted as
the archive is read, so a compressed bomb is stopped before it is inflated). Messages name members as
the archive does, never the server's directories.
"""

from __future__ import annotations

import hashlib
import io
import lzma
import posixpath
import re
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from pathlib import Path

from policies_app.iac.file_sandbox import escapes, escaping_link, scrub
from policies_app.iac.sources import CACHE_LABEL, TemplateSourceError, publish_directory

MAX_ARCHIVE_MEMBERS = 20_000
MAX_ARCHIVE_BYTES = 512 * 1024 * 1024  # uncompressed; stops a zip bomb before it fills the disk


def extract_archive(archive_bytes: bytes, cache_dir: str) -> str:
    """Unpack an uploaded .tar.gz (or .tar, .tar.bz2, .tar.xz) or .zip; return its absolute directory.

    The directory is ``cache_dir/archives/<sha256 of the bytes>/`` and is reused for the same bytes.
    Refused (TemplateSourceError): absolute member names, members leaving the directory with ``..``,
    symlinks or hard links pointing outside it, devices and fifos, more than MAX_ARCHIVE_MEMBERS
    members or MAX_ARCHIVE_BYTES unpacked. A single top-level folder is kept, not stripped.
    """
    digest = hashlib.sha256(archive_bytes).hexdigest()
    root = Path(cache_dir).resolve() / "archives"
    target = root / digest
    if target.is_dir():
        return str(target)
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
    try:
        files = staging / "files"
        files.mkdir()
        try:
            if archive_bytes[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
                _extract_zip(archive_bytes, files)
            else:
                _extract_tar(archive_bytes, files)
        except TemplateSourceError as problem:
            # An error of the standard library may quote where it was writing: say it relative to the
            # archive, and name the cache around it without its place on the server.
            shown = scrub(scrub(str(problem), str(files)), str(root.parent), CACHE_LABEL)
            raise TemplateSourceError(shown) from None
        escaping = escaping_link(str(files))
        if escaping is not None:
            raise TemplateSourceError(f"the archive: symlink {escaping!r} points outside the template")
        publish_directory(files, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return str(target)


def _extract_zip(archive_bytes: bytes, destination: Path) -> None:
    try:
        archive = zipfile.ZipFile(io.BytesIO(archive_bytes))
    except zipfile.BadZipFile as error:
        raise TemplateSourceError(f"the archive is not a valid zip file: {error}") from None
    with archive:
        members = archive.infolist()  # the central directory: nothing is inflated yet
        _check_totals(len(members), sum(member.file_size for member in members))
        for member in members:
            _safe_member_name(member.filename)
            mode = member.external_attr >> 16
            if (mode & 0o170000) == 0o120000:
                raise TemplateSourceError(
                    f"archive member {member.filename!r} is a symlink; zip symlinks are refused"
                )
        try:
            # Each member inflates to at most its declared size, which the totals bounded.
            archive.extractall(destination)
        except (zipfile.BadZipFile, OSError, RuntimeError) as error:
            raise TemplateSourceError(f"the archive could not be unpacked: {error}") from None


def _extract_tar(archive_bytes: bytes, destination: Path) -> None:
    try:
        archive = tarfile.open(fileobj=io.BytesIO(archive_bytes), mode="r:*")
    except tarfile.TarError as error:
        raise TemplateSourceError(f"the archive is neither a zip nor a tar file: {error}") from None
    with archive:
        members = _checked_tar_members(archive)
        try:
            # The "data" filter repeats these checks inside the standard library (on the real paths,
            # after earlier members were written) and drops set-uid bits and ownership: defence in depth.
            archive.extractall(destination, members=members, filter="data")
        except (tarfile.TarError, OSError) as error:
            raise TemplateSourceError(f"the archive could not be unpacked: {error}") from None


def _checked_tar_members(archive: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """Every member, each checked as soon as its header is read: reading the next header of a compressed
    tar inflates the previous member's data, so the totals are checked before that happens."""
    members: list[tarfile.TarInfo] = []
    size = 0
    try:
        while (member := archive.next()) is not None:
            members.append(member)
            size += member.size if member.isfile() else 0
            _check_totals(len(members), size)
            _check_tar_member(member)
    except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError) as error:
        raise TemplateSourceError(f"the archive is damaged: {error}") from None
    return members


def _check_tar_member(member: tarfile.TarInfo) -> None:
    name = _safe_member_name(member.name)
    if member.issym() or member.islnk():
        link = member.linkname
        # A symlink is relative to its own folder; a hard link names another member.
        base = posixpath.dirname(name) if member.issym() else ""
        if link.startswith("/") or escapes(posixpath.join(base, link)):
            raise TemplateSourceError(
                f"archive member {member.name!r} links to {link!r}, outside the archive"
            )
    elif not (member.isfile() or member.isdir()):
        raise TemplateSourceError(f"archive member {member.name!r} is not a file, folder or link")


def _check_totals(count: int, size: int) -> None:
    if count > MAX_ARCHIVE_MEMBERS:
        raise TemplateSourceError(f"the archive has more than {MAX_ARCHIVE_MEMBERS} members")
    if size > MAX_ARCHIVE_BYTES:
        raise TemplateSourceError(f"the archive unpacks to more than {MAX_ARCHIVE_BYTES} bytes")


def _safe_member_name(name: str) -> str:
    normalised = name.replace("\\", "/")
    if normalised.startswith("/") or re.match(r"^[A-Za-z]:", normalised):
        raise TemplateSourceError(f"archive member {name!r} has an absolute path")
    if escapes(normalised):
        raise TemplateSourceError(f"archive member {name!r} leaves the archive folder with '..'")
    return posixpath.normpath(normalised)
