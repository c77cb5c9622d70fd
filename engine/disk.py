"""The data directory and the page cache in front of it.

Every byte the engine stores goes through a :class:`Disk`. It does two jobs:

* **Confinement.** Callers name files by paths relative to the data directory; a
  path that is absolute, has ``..``, an empty part, or characters outside
  ``[A-Za-z0-9._-]`` is refused with :class:`PathEscapeError`, so no user input can
  reach a file outside the directory.
* **A page-cache model.** Writes reach the real file at once (as they reach the OS
  page cache), but a file is only *durable* up to the size it had at its last
  :meth:`fsync`. :meth:`crash` (a power loss of one broker) truncates every file
  written since its last fsync back to its durable size: exactly what a hard crash
  loses when nothing forced a flush. Renames and deletes are durable at once, as on
  a journaling file system.
* **Write-behind, inside that model.** A write of up to :data:`SMALL_WRITE` bytes and the
  writes that continue it (batches appended one after another) are gathered in memory and
  reach the file with one ``pwrite`` (at most :data:`PENDING_BYTES` per file), the way the OS
  gathers them in its page cache. Every other operation first puts a file's gathered bytes in place:
  reading it, asking its size, truncating, fsync, renaming, deleting, closing its handle,
  :meth:`path` (whoever opens the file by its path sees every byte written), walking,
  capturing, pickling, :meth:`crash` and :meth:`flush`, and the process's normal exit. So
  what a read returns, what fsync makes durable, what a crash loses and the bytes in the
  file afterwards are exactly what they were with one ``pwrite`` per write
  (tests/engine/test_disk_write_behind.py holds it to a disk without the buffer). A Run's
  command, the wire listener's step and a replayed record's entry :meth:`flush` when they
  end, so a process killed outright loses only bytes of a command it was still in.

File handles are cached and reopened lazily, so a ``Disk`` pickles (the engine's
snapshots are pickles plus :meth:`capture` of the files).
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import stat
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from .errors import PathEscapeError

__all__ = ["Disk", "FileImage"]

_PART_RE = re.compile(r"^[A-Za-z0-9._-]{1,255}$")
def _max_open() -> int:
    """Handles one Disk keeps open: 1024 (a broker with 100 partitions has 300 segment and index
    files; with fewer handles than the files in use every append reopened one), or an eighth of
    the process's file limit when that is lower (a web process holds many sandboxes' disks), and
    never below the 256 it always had."""
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):  # pragma: no cover - no resource module
        return 256
    if soft == resource.RLIM_INFINITY:
        return 1024
    return max(256, min(1024, soft // 8))


_MAX_OPEN = _max_open()
# Write-behind (see the module docstring): a write that starts where the file's gathered bytes
# end is gathered while they stay within PENDING_BYTES; a write of at most SMALL_WRITE bytes
# starts a file's gathering; a disk writes everything out once PENDING_FILES files hold some.
SMALL_WRITE = 32 * 1024
PENDING_BYTES = 64 * 1024
PENDING_FILES = 64
_WITH_PENDING: "weakref.WeakSet[Disk]" = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:  # pragma: no cover - process exit
    for disk in list(_WITH_PENDING):
        try:
            disk.flush()
        except Exception:
            pass


@dataclass(frozen=True)
class FileImage:
    """A file's content in a snapshot: its length and its bytes without trailing
    zeros (preallocated index files are mostly zeros)."""

    size: int
    data: bytes
    is_dir: bool = False


# Validated/resolved paths cached per Disk. Bounded: a sandbox's files are renamed and
# deleted all the time, so an unbounded cache held megabytes of dead names per sandbox.
PATH_CACHE_ENTRIES = 1024


class Disk:
    """``allocate=True`` makes every extension by :meth:`truncate` (preallocation) take real
    blocks (``posix_fallocate``) instead of leaving a hole, so ``du`` shows what the quota
    counts; Kafka itself preallocates sparse files (``RandomAccessFile.setLength``)."""

    def __init__(self, root: str | os.PathLike, *, allocate: bool = False, os_fsync: bool = True) -> None:
        self.allocate = allocate
        # False: fsync keeps its modelled meaning (what a crash keeps, below) but the OS is not
        # asked to flush -- for throwaway sandboxes whose files no real crash should outlive.
        self.os_fsync = os_fsync
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._durable: dict[str, int] = {}   # dirty files -> durable size
        # Unsynced writes into a preallocated file's zeros (rel -> (start, end)); a crash
        # zeroes that range again, since a length check cannot see them.
        self._volatile: dict[str, tuple[int, int]] = {}
        self._handles: dict[str, int] = {}   # rel -> os-level fd
        self._checked: set[str] = set()      # paths already validated (hot path)
        self._paths: dict[str, Path] = {}    # rel -> absolute path, once resolved inside root
        self._dirs: dict[str, Path] = {}     # directory part of a rel -> its path, resolved inside root
        # Write-behind: rel -> [end, start + PENDING_BYTES, start, chunks] of the writes not
        # yet passed to the OS (chunks: immutable bytes, joined when written).
        self._pending: dict[str, list] = {}

    def relocate(self, root: str | os.PathLike) -> None:
        """Point this disk at another directory (a restored snapshot or a fork)."""
        self.close_all()
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._paths = {}
        self._dirs = {}
        self._block = None

    # ---- paths -------------------------------------------------------------
    def check(self, rel: str) -> str:
        """Validate a relative path and return it normalised (``a/b``)."""
        if rel in self._checked:
            return rel
        if not isinstance(rel, str) or not rel or rel.startswith("/") or "\\" in rel:
            raise PathEscapeError(f"not a relative path inside the data directory: {rel!r}")
        parts = rel.split("/")
        for part in parts:
            if part in ("", ".", "..") or not _PART_RE.match(part):
                raise PathEscapeError(f"path {rel!r} has a part {part!r} that is not allowed")
        if len(self._checked) >= PATH_CACHE_ENTRIES:  # bounded: segment names keep changing
            self._checked.clear()
        self._checked.add(rel)
        return rel

    def path(self, rel: str) -> Path:
        if self._pending:
            self._settle(rel)                 # whoever opens it by path sees every byte
        cached = self._paths.get(rel)
        if cached is not None:
            return cached
        rel = self.check(rel)
        # Belt and braces: symlinks inside the directory must not lead out of it either. The
        # directory part is resolved once (segment files come and go, their directories stay);
        # the file itself costs one lstat: only a symlink there needs resolving. (The engine
        # never makes symlinks, so a path once found inside stays inside.)
        head, _, leaf = rel.rpartition("/")
        parent = self._dirs.get(head)
        if parent is None:
            parent = self.root / head if head else self.root
            self._inside(parent, head)
            if len(self._dirs) >= PATH_CACHE_ENTRIES:
                self._dirs.clear()
            self._dirs[head] = parent
        p = parent / leaf
        try:
            link = stat.S_ISLNK(os.lstat(p).st_mode)
        except OSError:
            link = False                      # not there (yet): nothing to follow
        if link:
            self._inside(p, rel)
        if len(self._paths) >= PATH_CACHE_ENTRIES:
            self._paths.clear()
        self._paths[rel] = p
        return p

    def _inside(self, p: Path, rel: str) -> None:
        resolved = p.resolve()
        if self.root not in resolved.parents and resolved != self.root:
            raise PathEscapeError(f"path {rel!r} resolves outside the data directory")

    # ---- directories -------------------------------------------------------
    def mkdir(self, rel: str) -> None:
        self.path(rel).mkdir(parents=True, exist_ok=True)

    def exists(self, rel: str) -> bool:
        return self.path(rel).exists()

    def listdir(self, rel: str) -> list[str]:
        p = self.path(rel)
        return sorted(os.listdir(p)) if p.is_dir() else []

    def rmtree(self, rel: str) -> None:
        rel = self.check(rel)
        for key in [k for k in self._pending if k == rel or k.startswith(rel + "/")]:
            del self._pending[key]            # the files go: nothing to write
        for key in [k for k in self._handles if k == rel or k.startswith(rel + "/")]:
            self._close(key)
        for key in [k for k in self._durable if k == rel or k.startswith(rel + "/")]:
            del self._durable[key]
        for key in [k for k in self._volatile if k == rel or k.startswith(rel + "/")]:
            del self._volatile[key]
        shutil.rmtree(self.path(rel), ignore_errors=True)

    # ---- files -------------------------------------------------------------
    def _fd(self, rel: str) -> int:
        fd = self._handles.get(rel)
        if fd is None:
            if len(self._handles) >= _MAX_OPEN:
                self._close(next(iter(self._handles)))
            fd = os.open(self.path(rel), os.O_RDWR | os.O_CREAT, 0o644)
            self._handles[rel] = fd
        return fd

    def _close(self, rel: str) -> None:
        if rel in self._pending:
            self._write_pending(rel)
        fd = self._handles.pop(rel, None)
        if fd is not None:
            os.close(fd)

    # ---- write-behind --------------------------------------------------------
    def _write_pending(self, rel: str) -> None:
        _, _, start, chunks = self._pending.pop(rel)
        fd = self._handles[rel]
        view = memoryview(b"".join(chunks))
        while view:
            n = os.pwrite(fd, view, start)
            view, start = view[n:], start + n

    def _settle(self, rel: str) -> None:
        """Write the gathered bytes of ``rel`` and of every file below it (a directory)."""
        pending = self._pending
        if rel in pending:
            self._write_pending(rel)
        if pending:
            below = rel + "/"
            for key in [k for k in pending if k.startswith(below)]:
                self._write_pending(key)

    def flush(self, rel: str | None = None) -> None:
        """Hand the gathered writes (of ``rel``, or of every file) to the OS. Not an fsync:
        nothing becomes durable; the files only hold what was written to them."""
        if rel is None:
            for key in list(self._pending):
                self._write_pending(key)
        elif rel in self._pending:
            self._write_pending(rel)

    def close_all(self) -> None:
        for rel in list(self._handles):
            self._close(rel)

    def touch(self, rel: str) -> None:
        rel = self.check(rel)
        existed = self.path(rel).exists()
        self._fd(rel)
        if not existed:
            self._durable.setdefault(rel, 0)

    def size(self, rel: str) -> int:
        rel = self.check(rel)
        if rel in self._pending:
            self._write_pending(rel)
        if rel in self._handles:
            return os.fstat(self._handles[rel]).st_size
        p = self.path(rel)
        return p.stat().st_size if p.exists() else 0

    def _dirty(self, rel: str) -> None:
        if rel not in self._durable:
            p = self.path(rel)
            self._durable[rel] = p.stat().st_size if p.exists() else 0

    def append(self, rel: str, data: bytes) -> int:
        """Write ``data`` at the end of the file; return the position it starts at."""
        rel = self.check(rel)
        if rel in self._pending:
            self._write_pending(rel)
        self._dirty(rel)
        fd = self._fd(rel)
        pos = os.lseek(fd, 0, os.SEEK_END)
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        return pos

    def write_at(self, rel: str, pos: int, data: bytes, into_preallocated: bool = False) -> None:
        """Write at ``pos``. ``into_preallocated``: the bytes overwrite zeros a preallocation
        left (a preallocated .log), so a crash before the next fsync turns them back to zeros.
        A small write that continues the file's gathered bytes is gathered (write-behind)."""
        pending = self._pending.get(rel)
        if pending is not None and pending[0] == pos and pos + len(data) < pending[1]:
            pending[0] = pos + len(data)
            pending[3].append(data if type(data) is bytes else bytes(data))   # kept: must not change
        else:
            if pending is not None:
                self._write_pending(rel)      # writes reach the file in the order made
            fd = self._handles.get(rel)
            if fd is None or rel not in self._durable:
                # An open handle means the path was checked, and a file in _durable is already
                # dirty: only a first write since the last fsync (or open) needs the two steps.
                rel = self.check(rel)
                self._dirty(rel)
                fd = self._fd(rel)
            if len(data) <= SMALL_WRITE:
                if len(self._pending) >= PENDING_FILES:
                    self.flush()
                elif not self._pending:
                    _WITH_PENDING.add(self)
                self._pending[rel] = [pos + len(data), pos + PENDING_BYTES, pos, [bytes(data)]]
            else:
                os.pwrite(fd, data, pos)
        if into_preallocated and data:
            lo, hi = self._volatile.get(rel, (pos, pos))
            self._volatile[rel] = (min(lo, pos), max(hi, pos + len(data)))

    def read(self, rel: str, pos: int, length: int) -> bytes:
        rel = self.check(rel)
        if rel in self._pending:
            self._write_pending(rel)
        if length <= 0:
            return b""
        return os.pread(self._fd(rel), length, pos)

    def read_all(self, rel: str) -> bytes:
        return self.read(rel, 0, self.size(rel))

    def truncate(self, rel: str, size: int) -> None:
        """Shrink or extend (with zeros, as a sparse file) to ``size`` bytes."""
        rel = self.check(rel)
        if rel in self._pending:
            self._write_pending(rel)
        self._dirty(rel)
        fd = self._fd(rel)
        before = os.fstat(fd).st_size if self.allocate else size
        os.ftruncate(fd, size)
        if size > before:
            _fallocate(fd, before, size - before)

    def fsync(self, rel: str) -> None:
        rel = self.check(rel)
        if rel in self._pending:
            self._write_pending(rel)
        if rel in self._handles and self.os_fsync:
            os.fsync(self._handles[rel])
        self._durable.pop(rel, None)
        self._volatile.pop(rel, None)

    def is_dirty(self, rel: str) -> bool:
        return self.check(rel) in self._durable

    def durable_size(self, rel: str) -> int:
        rel = self.check(rel)
        return self._durable.get(rel, self.size(rel))

    def dirty_files(self, prefix: str = "") -> dict[str, tuple[int, int]]:
        """``{path: (durable size, size)}`` of every file under ``prefix`` with bytes that
        exist only in the page cache (written since its last fsync)."""
        prefix = self.check(prefix) + "/" if prefix else ""
        return {rel: (durable, self.size(rel)) for rel, durable in sorted(self._durable.items())
                if rel.startswith(prefix)}

    def writeback(self, prefix: str = "", page_size: int = 4096) -> list[tuple[str, int, int]]:
        """The kernel's flusher writing dirty pages back on its own (no fsync asked): every
        dirty file under ``prefix`` becomes durable up to its last *whole* page; the partial
        last page stays dirty. A power loss afterwards can cut a file inside a record batch
        that straddles a page boundary. Returns ``(path, durable before, durable after)``."""
        if page_size < 1:
            raise ValueError(f"page size must be positive, got {page_size}")
        prefix = self.check(prefix) + "/" if prefix else ""
        moved = []
        for rel in sorted(k for k in self._durable if k.startswith(prefix)):
            durable, size = self._durable[rel], self.size(rel)
            target = size - size % page_size
            if target > durable:
                moved.append((rel, durable, target))
                if target >= size:
                    del self._durable[rel]
                else:
                    self._durable[rel] = target
        return moved

    def write_atomic(self, rel: str, data: bytes) -> None:
        """Kafka's checkpoint write: ``rel.tmp``, fsync, rename over ``rel``."""
        rel = self.check(rel)
        if not self.os_fsync:
            # Only modelled crashes reach this disk, and none falls inside this call: the
            # same end state (``rel`` whole and durable) without the rename's cost.
            self.truncate(rel, 0)        # through the cached handle: no open, no rename
            self.append(rel, data)
            self._durable.pop(rel, None)
            self._volatile.pop(rel, None)
            return
        # The steps of delete(tmp), append, fsync and rename(tmp, rel), with the file's own
        # handle: no stat of a tmp that is normally absent, no seek, no handle kept for it.
        tmp = self.check(rel + ".tmp")
        self._pending.pop(tmp, None)           # a tmp left by a crash inside an earlier write
        self._close(tmp)
        self._durable.pop(tmp, None)
        self._volatile.pop(tmp, None)
        target = str(self.path(rel))
        tmp_path = target + ".tmp"             # beside rel; not cached: it lives for this call
        # O_NOFOLLOW: a symlink planted at the tmp's name is refused, not followed (what
        # path()'s lstat check would have found).
        fd = os.open(tmp_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        self._pending.pop(rel, None)           # bytes for the file being replaced
        self._close(rel)
        os.replace(tmp_path, target)
        self._durable.pop(rel, None)
        self._volatile.pop(rel, None)

    def rename(self, src: str, dst: str) -> None:
        src, dst = self.check(src), self.check(dst)
        self._close(src)
        self._close(dst)
        os.replace(self.path(src), self.path(dst))
        self._durable.pop(dst, None)
        if src in self._durable:
            self._durable[dst] = self._durable.pop(src)
        self._volatile.pop(dst, None)
        if src in self._volatile:
            self._volatile[dst] = self._volatile.pop(src)

    def delete(self, rel: str) -> bool:
        rel = self.check(rel)
        self._pending.pop(rel, None)          # the file goes: nothing to write
        self._close(rel)
        self._durable.pop(rel, None)
        self._volatile.pop(rel, None)
        p = self.path(rel)
        if p.exists():
            p.unlink()
            return True
        return False

    # ---- faults and snapshots ---------------------------------------------
    def crash(self, prefix: str = "") -> list[tuple[str, int, int]]:
        """Power loss under ``prefix``: every file written since its last fsync falls
        back to its durable size, and unsynced writes into preallocated zeros become zeros
        again. Returns ``(path, size before, size after)`` (for the latter: where the lost
        data ended and where it began)."""
        prefix = self.check(prefix) + "/" if prefix else ""
        # The gathered writes are in the page cache this models: in place first, so the sizes
        # before and what is lost are those of one pwrite per write.
        for rel in [k for k in self._pending if k.startswith(prefix)]:
            self._write_pending(rel)
        lost = []
        for rel in sorted(k for k in self._durable if k.startswith(prefix)):
            durable = self._durable.pop(rel)
            self._close(rel)
            p = self.path(rel)
            if p.exists():
                before = p.stat().st_size
                if before > durable:
                    os.truncate(p, durable)
                    lost.append((rel, before, durable))
        for rel in sorted(k for k in self._volatile if k.startswith(prefix)):
            lo, hi = self._volatile.pop(rel)
            p = self.path(rel)
            size = p.stat().st_size if p.exists() else 0
            if lo < min(hi, size):
                fd = self._fd(rel)
                os.pwrite(fd, bytes(min(hi, size) - lo), lo)
                lost.append((rel, min(hi, size), lo))
        for rel in [k for k in self._handles if k.startswith(prefix)]:
            self._close(rel)
        return lost

    def walk(self, rel: str = "") -> Iterator[str]:
        self.flush()
        base = self.path(rel) if rel else self.root
        for dirpath, _, files in os.walk(base):
            for name in sorted(files):
                yield os.path.relpath(os.path.join(dirpath, name), self.root).replace(os.sep, "/")

    def walk_dirs(self) -> Iterator[str]:
        """Every directory below the root (empty ones too: a snapshot must bring them back)."""
        for dirpath, dirs, _ in os.walk(self.root):
            for name in sorted(dirs):
                yield os.path.relpath(os.path.join(dirpath, name), self.root).replace(os.sep, "/")

    def usage_bytes(self, rel: str = "") -> int:
        """What the files and directories below ``rel`` take on disk, for quotas: each counts
        its allocated blocks (what ``du`` reports: ``st_blocks * 512``) or its length rounded
        up to whole blocks, whichever is larger. So preallocated bytes count in full even
        while the file system keeps them as holes (a preallocated index is sparse), and a
        100-byte checkpoint counts the block it occupies. When preallocation is small (the
        sandboxes' ``segment.index.bytes``) this equals ``du``. Quotas ask this after every
        command, so it walks with scandir instead of building paths."""
        self.flush()
        block = self._block_size()
        total = 0
        stack = [str(self.path(rel)) if rel else str(self.root)]
        while stack:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                        total += entry.stat(follow_symlinks=False).st_blocks * 512
                    elif entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        total += max(st.st_blocks * 512, -(-st.st_size // block) * block)
        return total

    def _block_size(self) -> int:
        size = getattr(self, "_block", None)
        if size is None:
            size = self._block = os.statvfs(self.root).f_bsize or 4096
        return size

    def list_files(self, rel: str) -> list[tuple[str, int]]:
        """``(name, size)`` of the files directly in ``rel``, sorted by name."""
        p = self.path(rel)
        if not p.is_dir():
            return []
        with os.scandir(p) as entries:
            return sorted((e.name, e.stat(follow_symlinks=False).st_size) for e in entries
                          if e.is_file(follow_symlinks=False))

    def capture(self) -> dict[str, FileImage]:
        """Every file's content, for a snapshot. Reads only up to the end of each file's
        last data extent: preallocated index files are 10 MiB of mostly holes."""
        out = {rel: FileImage(0, b"", True) for rel in self.walk_dirs()}
        for rel in self.walk():
            size = self.size(rel)
            end = self._data_end(rel, size)
            out[rel] = FileImage(size, self.read(rel, 0, end).rstrip(b"\0") if end else b"")
        return out

    def _data_end(self, rel: str, size: int) -> int:
        """Offset just past the last byte that is not in a hole (``size`` when unsure)."""
        if size == 0 or not hasattr(os, "SEEK_DATA"):
            return size
        fd = self._fd(rel)
        end = pos = 0
        try:
            while pos < size:
                try:
                    data = os.lseek(fd, pos, os.SEEK_DATA)
                except OSError:  # ENXIO: only a hole remains
                    break
                hole = os.lseek(fd, data, os.SEEK_HOLE)
                end, pos = min(hole, size), hole
            return end
        except OSError:  # a file system without SEEK_DATA
            return size

    def restore(self, images: dict[str, FileImage], durable: dict[str, int] | None = None,
                keep: frozenset[str] | set[str] = frozenset()) -> None:
        """Make the directory hold exactly ``images`` plus the paths of ``keep``, which the
        caller knows already hold what they should (used by rewind and fork: a rewind
        rewrites only the files that changed)."""
        self.close_all()
        if not keep:
            for child in list(self.root.iterdir()):
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        else:
            for rel in list(self.walk()):
                if rel not in keep:
                    self.path(rel).unlink()
            for rel in sorted(self.walk_dirs(), reverse=True):     # deepest first
                if rel not in keep and rel not in images:
                    shutil.rmtree(self.path(rel), ignore_errors=True)
        for rel, image in sorted(images.items()):
            if image.is_dir:
                self.path(rel).mkdir(parents=True, exist_ok=True)
                continue
            p = self.path(rel)
            p.parent.mkdir(parents=True, exist_ok=True)
            with open(p, "wb") as fh:
                fh.write(image.data)
                fh.truncate(image.size)
                if self.allocate and image.size > len(image.data):
                    _fallocate(fh.fileno(), len(image.data), image.size - len(image.data))
        self._durable = dict(durable or {})

    def __getstate__(self) -> dict:
        self.flush()
        return {"root": str(self.root), "_durable": dict(self._durable), "allocate": self.allocate,
                "_volatile": dict(self._volatile), "os_fsync": self.os_fsync}

    def __setstate__(self, state: dict) -> None:
        self.allocate = state.get("allocate", False)
        self.os_fsync = state.get("os_fsync", True)
        self.root = Path(state["root"])
        self._durable = state["_durable"]
        self._volatile = state.get("_volatile", {})
        self._handles = {}
        self._checked = set()
        self._paths = {}
        self._dirs = {}
        self._pending = {}

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close_all()
        except Exception:
            pass


def _fallocate(fd: int, offset: int, length: int) -> None:
    """Allocate blocks for ``[offset, offset + length)`` where the platform can (the file is
    already that long; on a file system without fallocate it simply stays sparse)."""
    if hasattr(os, "posix_fallocate"):
        try:
            os.posix_fallocate(fd, offset, length)
        except OSError:
            pass
