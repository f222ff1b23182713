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
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from solvers.contract import MAX_SEED

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
    """Put ``entry`` in place of the one for the same file; every other entry stays, and so
    does the file's record of evaluations (``judge``)."""
    def change(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        old = [e for e in entries if e.get("file") == entry["file"]]
        kept = {"evaluations": old[0]["evaluations"]} if old and "evaluations" in old[0] else {}
        return [e for e in entries if e.get("file") != entry["file"]] + [{**entry, **kept}]

    update(change, path)


#: A checkpoint file is replaced only when its validation gap improves by at least this many
#: percentage points on its fixed set: smaller gains are mostly the luck of many evaluations
#: on one set, and every replaced file adds megabytes to the repository's history.
MIN_GAIN_POINTS = 0.1


def judge(file: str, gap: float, to_beat: float | None, evaluation: dict[str, Any],
          path: Path | None = MANIFEST) -> bool:
    """Whether a model validated at ``gap`` (percent, lower is better) may replace the
    checkpoint ``file``, whose gap on the same set is ``to_beat`` (None: no file to beat):
    only by a gain of at least ``MIN_GAIN_POINTS``. Every trainer decides through this one
    function; the evaluation (``evaluation`` plus the gap and the verdict) is appended to the
    file's entry in ``path`` (None: an experiment outside weights/, not recorded)."""
    gain = None if to_beat is None else round(to_beat - gap, 6)
    verdict = gain is None or gain >= MIN_GAIN_POINTS
    if path is not None:
        record = {**evaluation, "gap_percent": round(gap, 3),
                  "gain_points": None if gain is None else round(gain, 3),
                  "candidate": verdict}

        def change(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
            for e in entries:
                if e.get("file") == file:
                    e.setdefault("evaluations", []).append(record)
                    return entries
            return [*entries, {"file": file, "evaluations": [record]}]

        update(change, path)
    return verdict


def refresh_sha(weights: Path, path: Path = MANIFEST) -> None:
    """The checkpoint was rewritten with the same content (e.g. optimizer state dropped)."""
    sha = file_sha256(weights)

    def change(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for e in entries:
            if e.get("file") == weights.name:
                e["sha256"] = sha
        return entries

    update(change, path)


def check_common_args(parser: Any, args: Any) -> None:
    """Refuse, as a usage error, what would otherwise end in a traceback later:
    a CUDA device torch cannot see, and input files (``--labels``, ``--parent``) that are not
    there."""
    check_seed(parser, args)
    device = str(getattr(args, "device", "cpu"))
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            parser.error(f"--device {device}: torch sees no CUDA device here; use --device cpu")
    for option in ("labels", "parent"):
        value = getattr(args, option, None)
        for name in str(value).split(",") if value else []:
            if not Path(name).is_file():
                parser.error(f"--{option}: no such file: {name}")


def check_seed(parser: Any, args: Any) -> None:
    """``--seed`` in the service's range, 0 to 2**31 − 1: a negative one was numpy's
    ValueError traceback after the parsing, and 2**64 was taken."""
    seed = getattr(args, "seed", None)
    if seed is not None and not 0 <= seed <= MAX_SEED:
        parser.error(f"--seed: must be between 0 and {MAX_SEED}, got {seed}")


def progress_line(every_seconds: float = 60.0) -> Callable[[int, list[float], float, float],
                                                           None]:
    """A printer called after every training step: once a minute one line with the steps,
    their rate, the recent loss and the time left, so a run is not silent until its first
    validation (five minutes or more)."""
    import time

    last = [time.time(), 0]

    def show(steps: int, losses: list[float], started: float, minutes: float) -> None:
        now = time.time()
        if now - last[0] < every_seconds:
            return
        rate = (steps - last[1]) / (now - last[0]) if last[1] else 0.0
        recent = losses[-100:]
        loss = sum(recent) / len(recent) if recent else float("nan")
        left = max(0.0, minutes - (now - started) / 60)
        print(f"  step {steps}" + (f" ({rate:.2f}/s)" if rate else "")
              + f", loss {loss:.4f}, {left:.1f} min left", flush=True)
        last[0], last[1] = now, steps

    return show


def graceful_stop() -> Callable[[], bool]:
    """The first Ctrl-C asks the training loop to stop after its current step, so that it
    validates and saves as at the end of its time (a Ctrl-C would lose everything since
    the last evaluation, up to six minutes); a second Ctrl-C quits at once. Returns the
    loop's test "was a stop asked for?"."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        return stop.is_set

    def on_sigint(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        print("interrupted: finishing this step, then validating and saving "
              "(Ctrl-C again to quit at once, losing that)", file=sys.stderr, flush=True)

    signal.signal(signal.SIGINT, on_sigint)
    return stop.is_set


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
