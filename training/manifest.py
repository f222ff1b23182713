"""weights/MANIFEST.json: one entry per shipped checkpoint, written by every trainer.

Several training runs share the file (on the 2-core machine SIT, PolyNet and GOODRL often run
side by side), so an update is a read-modify-write under an exclusive lock on a sidecar file,
finished by an atomic rename: two runs never drop each other's entries and a reader never sees
half a file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

MANIFEST = Path(__file__).resolve().parents[1] / "weights" / "MANIFEST.json"


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    lock = path.with_name(f".{path.name}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def update(change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
           path: Path = MANIFEST) -> None:
    """Apply ``change`` to the list of entries and write the file back, under the lock."""
    with _locked(path):
        manifest = json.loads(path.read_text()) if path.exists() else {"checkpoints": []}
        manifest.setdefault("schema", 1)
        entries = change(list(manifest.get("checkpoints", [])))
        manifest["checkpoints"] = sorted(entries, key=lambda e: e["file"])
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(manifest, indent=2) + "\n")
        tmp.replace(path)


def replace_entry(entry: dict[str, Any], path: Path = MANIFEST) -> None:
    """Put ``entry`` in place of the one for the same file; every other entry stays."""
    update(lambda entries: [e for e in entries if e.get("file") != entry["file"]] + [entry],
           path)


def refresh_sha(weights: Path, path: Path = MANIFEST) -> None:
    """The checkpoint was rewritten with the same content (e.g. optimizer state dropped)."""
    sha = file_sha256(weights)

    def change(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for e in entries:
            if e.get("file") == weights.name:
                e["sha256"] = sha
        return entries

    update(change, path)


def claim_training(checkpoint: Path) -> IO[str]:
    """Make this process the only training run on ``checkpoint``: a second run would resume
    the same state and overwrite the first one's better weights with its own. Keep the
    returned handle open for the run (the lock goes with the process)."""
    lock = checkpoint.with_name(f".{checkpoint.name}.train.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    fh = lock.open("a")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise SystemExit(f"another training run is writing {checkpoint}; stop it first "
                         f"(lock: {lock})") from None
    return fh
