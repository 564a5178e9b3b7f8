"""All-or-nothing output: folders and files appear complete or not at all.

A run, comparison or demo writes into a hidden temporary sibling of its destination,
``.<name>.tmp-<pid>-<random>``, and renames it into place only once everything has been written.
If anything fails (including Ctrl-C), the temporary folder is removed and the destination is
left exactly as it was. A process killed outright (kill -9, an abort in the core) cannot clean
up; the next command writing the same destination removes the temporary siblings whose process
no longer exists, and says so. An existing non-empty destination is an error unless ``force`` is set;
with ``force`` the old content is replaced only after the new content is complete.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Iterator

__all__ = ["OutputError", "atomic_dir", "atomic_file", "check_dest"]


class OutputError(Exception):
    """The destination cannot be written (it exists, or it is not a folder)."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_dest(dest: str | os.PathLike, force: bool = False, kind: str = "folder") -> Path:
    """Fail early if ``dest`` exists and may not be replaced; return it as a Path."""
    dest = Path(dest)
    if kind == "folder":
        if dest.exists() and not dest.is_dir():
            raise OutputError(f"output {dest} exists and is not a folder")
        if dest.is_dir() and any(dest.iterdir()) and not force:
            raise OutputError(f"output folder {dest} exists and is not empty (use --force to replace it)")
    else:
        if dest.is_dir():
            raise OutputError(f"output {dest} is a folder, expected a file path")
        if dest.exists() and not force:
            raise OutputError(f"output file {dest} exists (use --force to replace it)")
    return dest


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def remove_stale(dest: Path) -> list[Path]:
    """Remove the temporary siblings of ``dest`` left by processes that no longer exist."""
    parent = dest.absolute().parent
    if not parent.is_dir():
        return []
    pattern = re.compile(rf"^\.{re.escape(dest.name)}\.(tmp|old)-(\d+)-")
    removed = []
    for p in parent.iterdir():
        m = pattern.match(p.name)
        if m and not _alive(int(m.group(2))):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
            print(f"rtcc: removed {p}, left by an interrupted run", file=sys.stderr)
            removed.append(p)
    return removed


def _prefix(dest: Path, what: str) -> str:
    return f".{dest.name}.{what}-{os.getpid()}-"


@contextlib.contextmanager
def atomic_dir(dest: str | os.PathLike, force: bool = False) -> Iterator[Path]:
    """Yield a temporary folder that becomes ``dest`` when the ``with`` block succeeds."""
    dest = check_dest(dest, force)
    parent = dest.absolute().parent
    parent.mkdir(parents=True, exist_ok=True)
    remove_stale(dest)
    tmp = Path(tempfile.mkdtemp(prefix=_prefix(dest, "tmp"), dir=parent))
    try:
        os.chmod(tmp, 0o777 & ~_umask())
        yield tmp
        check_dest(dest, force)  # it may have appeared while we were working
        _replace_dir(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _replace_dir(src: Path, dest: Path) -> None:
    if not dest.exists():
        os.rename(src, dest)
        return
    old = Path(tempfile.mkdtemp(prefix=_prefix(dest, "old"), dir=dest.absolute().parent))
    old.rmdir()
    os.rename(dest, old)
    try:
        os.rename(src, dest)
    except BaseException:
        os.rename(old, dest)
        raise
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def atomic_file(dest: str | os.PathLike, force: bool = False, mode: str = "w") -> Iterator:
    """Yield an open file whose content replaces ``dest`` when the ``with`` block succeeds."""
    dest = check_dest(dest, force, kind="file")
    parent = dest.absolute().parent
    parent.mkdir(parents=True, exist_ok=True)
    remove_stale(dest)
    fd, tmp = tempfile.mkstemp(prefix=_prefix(dest, "tmp"), dir=parent)
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, mode) as f:
            yield f
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
