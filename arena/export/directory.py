"""Where an export goes, and how a finished one is recognised.

An export is written whole into a temporary directory next to its target (same filesystem),
``manifest.json`` last, and then moved into place in one step: a rename when the target is new
or empty, an atomic exchange of the two directories (Linux ``renameat2(RENAME_EXCHANGE)``) when
``--overwrite`` replaces an earlier export. A killed export therefore leaves the target holding
either the old complete export or the new complete one, never a mix whose manifest lies. (Where
the exchange is not available the old directory is renamed aside first: a kill between the two
renames leaves the target missing, the old export intact beside it, never a wrong manifest.)
A new export directory gets the mode the umask gives any new directory; one that replaces a
directory keeps that directory's mode; a read-only target (no write permission for anyone, or
not for this user) is refused, never replaced.

:func:`verify_export` checks a finished export against its manifest (``arena analyze
--from-export``).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import json
import os
import secrets
import shutil
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from arena.errors import UserError

MANIFEST = "manifest.json"
HASH_CHUNK = 1024 * 1024
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def sha256_of(path: Path) -> str:
    """The hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def check_target(out: Path, overwrite: bool, export_names: Iterable[str]) -> None:
    """Refuse, before any work, a target that is a file, or a non-empty directory without
    ``--overwrite``, or (even with it) one holding anything but an export's files."""
    if not out.exists():
        if out.is_symlink():
            raise UserError(f"--out: {out} is a dangling symbolic link")
        return
    if not out.is_dir():
        raise UserError(f"--out: {out} exists and is not a directory")
    if not writable(out):
        raise UserError(
            f"--out: {out} is read-only (mode {stat.S_IMODE(out.stat().st_mode):o}); refusing "
            "to replace it (make it writable, or choose another directory)"
        )
    entries = sorted(entry.name for entry in out.iterdir())
    if not entries:
        return
    if not overwrite:
        raise UserError(
            f"--out: {out} is not empty (use --overwrite to replace the export it holds)"
        )
    known = set(export_names) | {MANIFEST, MANIFEST + ".partial"}
    foreign = [name for name in entries if name not in known]
    if foreign:
        raise UserError(
            f"--out: {out} holds {foreign[0]!r}, which is not part of an arena export; "
            "refusing to replace it"
        )


def writable(directory: Path) -> bool:
    """Whether this user may write into ``directory``, and its mode grants writing to anyone:
    a directory made read-only (``chmod a-w``) stays untouched even for root, whom
    ``os.access`` always answers yes."""
    return os.access(directory, os.W_OK) and bool(directory.stat().st_mode & 0o222)


def new_directory(parent: Path, prefix: str) -> Path:
    """A new directory ``parent/prefix<random>``, with the mode the umask gives any directory
    (``tempfile.mkdtemp`` makes 0700, which the export would then keep)."""
    while True:
        path = parent / f"{prefix}{secrets.token_hex(4)}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path


@contextlib.contextmanager
def staging(out: Path) -> Iterator[Path]:
    """A fresh temporary directory beside ``out``; removed again if the export fails."""
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        _sweep_stale(parent, out.name)
        staged = new_directory(parent, f".{out.name}.export-{os.getpid()}-")
    except OSError as exc:
        raise UserError(f"--out: cannot write into {parent}: {exc.strerror or exc}") from None
    try:
        yield staged
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise


def publish(staged: Path, out: Path) -> None:
    """Move the complete export in ``staged`` to ``out`` in one step (see the module doc)."""
    if out.is_symlink():
        out = out.resolve()
    if not out.exists():
        os.rename(staged, out)
        return
    staged.chmod(stat.S_IMODE(out.stat().st_mode))  # the directory replaced keeps its mode
    if not any(out.iterdir()):
        out.rmdir()
        os.rename(staged, out)
        return
    if _exchange(staged, out):
        shutil.rmtree(staged)  # it now holds the previous export
        return
    aside = new_directory(out.parent, f".{out.name}.old-{os.getpid()}-")
    aside.rmdir()
    os.rename(out, aside)
    os.rename(staged, out)
    shutil.rmtree(aside, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two directories; False where the system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _sweep_stale(parent: Path, name: str) -> None:
    """Remove temporary directories that killed exports of ``name`` left behind."""
    for prefix in (f".{name}.export-", f".{name}.old-"):
        for entry in parent.glob(prefix + "*"):
            pid_text = entry.name[len(prefix) :].split("-", 1)[0]
            if pid_text.isdigit() and not _alive(int(pid_text)) and entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def verify_export(directory: Path) -> dict[str, Any]:
    """Check every file ``manifest.json`` lists (size and sha256); return the manifest.

    Raises :class:`UserError` naming the file when the manifest is missing or unreadable, or a
    listed file is missing or does not match.
    """
    manifest_path = directory / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        files = manifest["files"]
        entries = [(str(v["file"]), int(v["bytes"]), str(v["sha256"])) for v in files.values()]
    except FileNotFoundError:
        raise UserError(
            f"{manifest_path}: missing (not a complete arena export; export it again)"
        ) from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UserError(f"{manifest_path}: unreadable manifest ({exc})".splitlines()[0]) from None
    for name, size, digest in entries:
        path = directory / name
        if Path(name).name != name or not path.is_file():
            raise UserError(f"{path}: listed in {MANIFEST} but missing")
        if path.stat().st_size != size or sha256_of(path) != digest:
            raise UserError(
                f"{path}: does not match the sha256 in {MANIFEST} (incomplete or modified "
                "export; export it again)"
            )
    return dict(manifest)
