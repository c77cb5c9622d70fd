"""A self-contained Python for Spark executors, shipped with each job through ``spark.archives``.

``python manage.py lab pack-env --out kafkaviz-lab-env.tar.gz`` writes a tar.gz whose root holds
a relocatable CPython (the interpreter this project runs on, its shared library and its standard
library without tests and GUI modules) and, in its ``site-packages``, only what executors import:
the engine and its codec libraries (:data:`EXECUTOR_DISTRIBUTIONS`). A sweep started with
``--env-archive FILE`` (or ``KAFKAVIZ_LAB_ENV_ARCHIVE``) on a standalone master passes it as
``spark.archives=FILE#environment``; each executor unpacks it into its working directory and runs
``./environment/bin/python3``, so a worker machine needs Spark and Java, and no Python of its own.

Why not venv-pack: a packed virtualenv links to its base interpreter by absolute path, so every
worker would still need the same Python installed at the same place. This archive carries the
interpreter itself (about 25 MB compressed); it runs on workers with a glibc at least as new as
the packing machine's, and the same CPU architecture.
"""
from __future__ import annotations

import importlib.metadata
import os
import sys
import sysconfig
import tarfile
from pathlib import Path

__all__ = ["pack_environment", "EXECUTOR_DISTRIBUTIONS", "ARCHIVE_ALIAS", "EXECUTOR_PYTHON"]

EXECUTOR_DISTRIBUTIONS = ("crc32c", "cramjam", "lz4", "zstandard")
ARCHIVE_ALIAS = "environment"
EXECUTOR_PYTHON = f"./{ARCHIVE_ALIAS}/bin/python3"
ENGINE_DIR = Path(__file__).resolve().parents[2] / "engine"
# Parts of the standard library an executor never imports.
_SKIP = {"site-packages", "test", "tests", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3",
         "__pycache__", "pydoc_data", "config-3.11-x86_64-linux-gnu"}


def _skip(path: Path) -> bool:
    return any(part in _SKIP or part.startswith("config-") for part in path.parts)


def pack_environment(out: Path) -> dict:
    """Write the archive to ``out`` (refused if it exists); return what went in."""
    out = Path(out)
    if out.exists():
        raise FileExistsError(f"{out} already exists")
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base = Path(sys.base_prefix)
    binary = Path(os.path.realpath(sys._base_executable))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    libdir = Path(sysconfig.get_config_var("LIBDIR") or base / "lib")
    shared = sysconfig.get_config_var("INSTSONAME") if sysconfig.get_config_var("Py_ENABLE_SHARED") else None
    site = f"lib/{version}/site-packages"
    part = out.with_name(out.name + ".part")
    files = 0
    with tarfile.open(part, "w:gz", compresslevel=6) as tar:
        def add(src: Path, arc: str) -> None:
            nonlocal files
            tar.add(str(src), arcname=arc, recursive=False)
            files += 1

        add(binary, "bin/python3")
        if shared and (libdir / shared).exists():
            add(Path(os.path.realpath(libdir / shared)), f"lib/{shared}")
        for f in sorted(stdlib.rglob("*")):
            rel = f.relative_to(stdlib)
            if f.is_file() and not _skip(rel):
                add(f, f"lib/{version}/{rel.as_posix()}")
        for name in EXECUTOR_DISTRIBUTIONS:
            dist = importlib.metadata.distribution(name)
            for entry in dist.files or ():
                src = Path(dist.locate_file(entry)).resolve()
                rel = Path(str(entry))
                if rel.parts[0] == ".." or "__pycache__" in rel.parts or not src.is_file():
                    continue     # console scripts outside site-packages, caches
                add(src, f"{site}/{rel.as_posix()}")
        for f in sorted(ENGINE_DIR.rglob("*.py")):
            add(f, f"{site}/{f.relative_to(ENGINE_DIR.parent).as_posix()}")
    os.replace(part, out)
    return {"path": str(out), "bytes": out.stat().st_size, "files": files, "python": sys.version.split()[0],
            "distributions": list(EXECUTOR_DISTRIBUTIONS)}
