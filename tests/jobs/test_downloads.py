"""A batch's zip is spooled: small ones stay in memory, large ones go to a temporary file, and
either reads back whole."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import pytest

from jobs import downloads
from jobs.downloads import ZipSummary, batch_zip, spooled_batch_zip
from jobs.store import JobStore


@pytest.mark.parametrize("spool_bytes", [1 << 20, 1024])
def test_spooled_zip_reads_back_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      spool_bytes: int) -> None:
    monkeypatch.setattr(downloads, "ZIP_SPOOL_BYTES", spool_bytes)
    store = JobStore(tmp_path / "data")
    summary = ZipSummary(os.urandom(40_000).hex(), '{"files": []}')  # incompressible
    spool = spooled_batch_zip(store, [], summary)
    try:
        assert spool._rolled == (spool_bytes < 80_000)  # on disk only past the threshold
        with zipfile.ZipFile(io.BytesIO(spool.read())) as archive:
            assert archive.read("summary.md").decode() == summary.markdown
            assert archive.read("summary.json") == b'{"files": []}'
    finally:
        spool.close()
    assert batch_zip(store, [], summary)[:2] == b"PK"  # in memory when no file is given
