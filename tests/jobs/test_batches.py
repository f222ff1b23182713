"""Batch archives read within their budget: members inflated a chunk at a time and counted as
they come, whatever their headers declare."""

from __future__ import annotations

import io
import struct
import tracemalloc
import zipfile

from jobs.batches import ReadBudget, expand_upload

GOOD = b"NAME: t\nTYPE: TSP\nDIMENSION: 3\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n" \
       b"1 0 0\n2 3 0\n3 0 4\nEOF\n"


def _lying_zip(real: int, declared: int) -> bytes:
    """A zip whose ``bomb.tsp`` inflates to ``real`` bytes but whose central directory says
    ``declared``, beside an honest ``good.tsp``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("good.tsp", GOOD)
        zf.writestr("bomb.tsp", b"0" * real)
    data = bytearray(buffer.getvalue())
    entry = data.find(b"PK\x01\x02", data.find(b"bomb.tsp") - 80)  # central entry
    while data[entry + 46:entry + 54] != b"bomb.tsp":
        entry = data.find(b"PK\x01\x02", entry + 4)
    struct.pack_into("<I", data, entry + 24, declared)  # its uncompressed size
    return bytes(data)


def test_zip_member_lying_about_its_size_is_not_inflated_whole() -> None:
    blob = _lying_zip(64 << 20, 100)
    skipped: list[dict] = []
    tracemalloc.start()
    try:
        files = expand_upload("b.zip", blob, ReadBudget(512 << 20, 10), skipped)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"{peak / 2**20:.0f} MiB held reading a 100-byte member"
    assert [name for name, _ in files] == ["good.tsp"]  # the honest member is still read
    assert [s["filename"] for s in skipped] == ["bomb.tsp"]
    assert "damaged" in skipped[0]["error"]


def test_zip_members_count_real_bytes_against_the_budget() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a.tsp", GOOD)
        zf.writestr("b.tsp", GOOD + b" " * 4000)
    skipped: list[dict] = []
    files = expand_upload("b.zip", buffer.getvalue(), ReadBudget(len(GOOD) + 100, 10), skipped)
    assert [name for name, _ in files] == ["a.tsp"]
    assert skipped[0]["filename"] == "b.tsp" and "expand past" in skipped[0]["error"]


def test_zip_bzip2_member_is_refused_unread() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("a.tsp", GOOD, compress_type=zipfile.ZIP_BZIP2)
        zf.writestr("b.tsp", GOOD, compress_type=zipfile.ZIP_DEFLATED)
    skipped: list[dict] = []
    files = expand_upload("b.zip", buffer.getvalue(), ReadBudget(1 << 20, 10), skipped)
    assert [name for name, _ in files] == ["b.tsp"]
    assert "deflate" in skipped[0]["error"]
