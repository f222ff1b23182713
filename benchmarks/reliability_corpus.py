"""A corpus of hostile and broken uploads for the five upload endpoints, generated here (no
file is shipped): truncated files, NaN coordinates, gzip and zip bombs, traversal names in
zips, billion laughs in a DAX workflow, bad DIMACS networks, identical points.

Each ``Bad`` says where it goes and what answer is right: ``refused`` files must get a 4xx
RFC 9457 problem naming ``field``; the others are valid if odd (identical points, a zip
whose names climb out of their folder) and may be served, but never with a 5xx.
``tests/reliability`` posts the quick part of it (``quick=True``); ``benchmarks/reliability.py``
all of it.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import struct
import zipfile
from dataclasses import dataclass

#: The upload endpoints and the form fields each gets besides the file.
ENDPOINTS: dict[str, tuple[str, str, dict[str, str]]] = {
    # name: (path, file part, fields)
    "solve": ("/v1/routing/tsp/solve", "file", {"solver": "nearest_neighbor", "time_limit": "1"}),
    "jobs": ("/v1/jobs", "file", {"problem": "tsp", "solver": "nearest_neighbor",
                                  "time_limit": "1"}),
    "batches": ("/v1/batches", "files", {"solver": "nearest_neighbor", "time_limit": "1"}),
    "flow": ("/v1/flow/min-cost", "file", {"time_limit": "2"}),
    "simulate": ("/v1/scheduling/simulate", "file", {"workflows_count": "3", "pool": "2x4"}),
}


@dataclass(frozen=True)
class Bad:
    """One upload: its endpoint (a key of ``ENDPOINTS``), file name and bytes; ``refused``:
    a 4xx naming ``field`` is the only right answer; ``quick``: in the short form."""

    name: str
    endpoint: str
    filename: str
    data: bytes
    refused: bool = True
    field: str | None = "file"
    quick: bool = True
    extra: dict[str, str] = dataclasses.field(default_factory=dict)


TSP = (b"NAME: t\nTYPE: TSP\nDIMENSION: 5\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n"
       b"1 0 0\n2 3 0\n3 3 4\n4 0 4\n5 1 2\nEOF\n")
DIMACS = b"p min 3 2\nn 1 4\nn 3 -4\na 1 2 0 5 1\na 2 3 0 5 2\n"
DAX = (b'<?xml version="1.0"?><adag xmlns="http://pegasus.isi.edu/schema/DAX" name="w">'
       b'<job id="a" name="t" runtime="10"/><job id="b" name="t" runtime="5"/>'
       b'<child ref="b"><parent ref="a"/></child></adag>')


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def lying_zip(real: int, declared: int = 100) -> bytes:
    """A zip whose one member, ``bomb.tsp``, inflates to ``real`` bytes while its central
    directory declares ``declared``."""
    data = bytearray(_zip({"bomb.tsp": b"0" * real}))
    entry = data.find(b"PK\x01\x02")
    struct.pack_into("<I", data, entry + 24, declared)
    return bytes(data)


def billion_laughs(levels: int = 9) -> bytes:
    """The entity expansion bomb, as a DAX workflow."""
    lines = ['<!ENTITY lol0 "lol">'] + [
        f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10}">' for i in range(1, levels + 1)]
    return (f'<?xml version="1.0"?><!DOCTYPE adag [{"".join(lines)}]>'
            f'<adag name="&lol{levels};"><job id="a" runtime="1"/></adag>').encode()


def corpus(gzip_bomb_bytes: int = 64 << 20, zip_bomb_bytes: int = 16 << 20) -> list[Bad]:
    """Every upload of the corpus; ``gzip_bomb_bytes`` and ``zip_bomb_bytes``: what the
    bombs inflate to (their compressed size is about a thousandth)."""
    bomb = gzip.compress(b"0" * gzip_bomb_bytes, compresslevel=9)
    nan = TSP.replace(b"3 3 4", b"3 nan 4")
    same = (b"NAME: s\nTYPE: TSP\nDIMENSION: 40\nEDGE_WEIGHT_TYPE: EUC_2D\nNODE_COORD_SECTION\n"
            + b"".join(b"%d 7 7\n" % i for i in range(1, 41)) + b"EOF\n")
    out: list[Bad] = []
    for endpoint in ("solve", "jobs"):
        out += [
            Bad(f"{endpoint}: truncated", endpoint, "t.tsp", TSP[:70]),
            Bad(f"{endpoint}: NaN coordinate", endpoint, "t.tsp", nan),
            Bad(f"{endpoint}: gzip bomb", endpoint, "t.tsp.gz", bomb),
            Bad(f"{endpoint}: truncated gzip", endpoint, "t.tsp.gz", gzip.compress(TSP)[:-9]),
            Bad(f"{endpoint}: empty", endpoint, "t.tsp", b""),
            Bad(f"{endpoint}: binary", endpoint, "t.tsp", bytes(range(256)) * 8),
            Bad(f"{endpoint}: JSON not an object", endpoint, "t.json", b"[1, 2, 3]"),
            Bad(f"{endpoint}: DIMENSION too large", endpoint, "t.tsp",
                TSP.replace(b"DIMENSION: 5", b"DIMENSION: 99999999999")),
            Bad(f"{endpoint}: unknown extension", endpoint, "t.exe", TSP),
            Bad(f"{endpoint}: identical points", endpoint, "same.tsp", same, refused=False,
                field=None),
        ]
    out += [
        Bad("batches: zip bomb (declared 100 bytes)", "batches", "b.zip", lying_zip(zip_bomb_bytes),
            field="files"),
        Bad("batches: zip of a gzip bomb", "batches", "b.zip", _zip({"t.tsp.gz": bomb}),
            field="files"),
        Bad("batches: traversal names", "batches", "b.zip",
            _zip({"../../../etc/passwd.tsp": TSP, "/abs/t2.tsp": TSP}), refused=False,
            field=None),
        Bad("batches: not a zip", "batches", "b.zip", b"PK\x03\x04 not really", field="files"),
        Bad("batches: truncated file", "batches", "t.tsp", TSP[:70], field="files"),
        Bad("flow: missing p line", "flow", "n.min", DIMACS.split(b"\n", 1)[1]),
        Bad("flow: arc to a node that is not there", "flow", "n.min",
            DIMACS.replace(b"a 2 3", b"a 2 9")),
        Bad("flow: negative capacity", "flow", "n.min", DIMACS.replace(b"0 5 1", b"0 -5 1")),
        Bad("flow: truncated", "flow", "n.min", DIMACS[:30]),
        Bad("flow: gzip bomb", "flow", "n.min.gz", bomb),
        Bad("flow: unbalanced supplies", "flow", "n.min", DIMACS.replace(b"n 3 -4", b"n 3 -3")),
        Bad("simulate: billion laughs", "simulate", "w.xml", billion_laughs()),
        Bad("simulate: truncated XML", "simulate", "w.xml", DAX[:90]),
        Bad("simulate: a cycle", "simulate", "w.xml", DAX.replace(
            b"</adag>", b'<child ref="a"><parent ref="b"/></child></adag>')),
        Bad("simulate: negative runtime", "simulate", "w.xml",
            DAX.replace(b'runtime="5"', b'runtime="-5"')),
        Bad("simulate: gzip bomb", "simulate", "w.xml.gz", bomb),
        Bad("simulate: external entity", "simulate", "w.xml",
            b'<?xml version="1.0"?><!DOCTYPE adag [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
            b'<adag name="&x;"><job id="a" runtime="1"/></adag>'),
    ]
    return out
