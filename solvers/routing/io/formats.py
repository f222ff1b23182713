"""Reading and writing routing files: TSPLIB .tsp, CVRPLIB .vrp (plain or .gz), Solomon-style
CVRPTW files (LKH-3's .vrptw and PyVRP's VRPLIB .vrp, with TIME_WINDOW_SECTION and
SERVICE_TIME or SERVICE_TIME_SECTION), our JSON form, and solutions as TSPLIB .tour, CVRPLIB
.sol or JSON.

Instances are parsed by ``vrplib``; we only decide what a parsed file means (problem type,
distance convention) and reject what we cannot honour with a clear error rather than a wrong
cost. Edge weights are never expanded to a matrix for coordinate files, so 100K-node files
load in about a second.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
from vrplib.parse import parse_vrplib

from solvers.errors import InstanceError, UnsupportedFormatError
from solvers.inflate import gunzip
from solvers.routing.io.documents import _row_words, instance_from_dict, load_json
from solvers.routing.problem import (
    CVRPInstance,
    CVRPTWInstance,
    Instance,
    TSPInstance,
    validate_service_times,
    validate_windows,
)

SUPPORTED_EDGE_WEIGHT_TYPES = ("EUC_2D", "CEIL_2D", "FLOOR_2D", "ATT", "GEO", "MAN_2D",
                               "MAX_2D", "EUC_3D", "EXPLICIT")
#: A GEO file is read as the explicit matrix of its great-circle distances (n² numbers), and
#: so are MAN_2D, MAX_2D and EUC_3D files (their coordinates' first two columns are kept for
#: drawings and the solvers that read geometry).
MAX_GEO_NODES = 10_000
#: TSPLIB's other coordinate norms, each rounded to the nearest integer (``nint``).
MATRIX_NORMS = ("MAN_2D", "MAX_2D", "EUC_3D")
#: Conventions for which a file's SCALE can be applied to the coordinates: LKH-3 multiplies
#: the Euclidean distance by SCALE before rounding, the same as scaling coordinates first.
SCALABLE_EDGE_WEIGHT_TYPES = ("EUC_2D", "CEIL_2D", "FLOOR_2D")
#: TYPE values read as a CVRP with time windows (LKH-3 writes CVRPTW, VRPLIB/PyVRP VRPTW).
TIME_WINDOW_TYPES = ("CVRPTW", "VRPTW")
#: TSPLIB's explicit matrix layouts; all but FULL_MATRIX give one triangle of a symmetric
#: matrix. The values are read as one stream, however the lines wrap.
SUPPORTED_EXPLICIT_FORMATS = ("FULL_MATRIX", "UPPER_ROW", "LOWER_ROW", "UPPER_DIAG_ROW",
                              "LOWER_DIAG_ROW", "UPPER_COL", "LOWER_COL", "UPPER_DIAG_COL",
                              "LOWER_DIAG_COL")
#: Refuse to decompress more than this (a guard against gzip bombs).
DEFAULT_MAX_TEXT_BYTES = 512 * 1024 * 1024


# -- text --------------------------------------------------------------------------------
def _strip_gz(name: str) -> tuple[str, bool]:
    lower = name.lower()
    if lower.endswith(".gz"):
        return name[:-3], True
    return name, False


def decode_bytes(data: bytes, filename: str, max_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> str:
    """Bytes of a (possibly gzipped) text file as text, with a clear error when corrupt."""
    _, gz = _strip_gz(filename)
    if gz or data[:2] == b"\x1f\x8b":
        # counted as a stream before it is kept, within the process's budget (solvers.inflate)
        data = gunzip(data, filename, max_bytes)
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        # UTF-16 with its byte order mark, as Windows editors save "Unicode" text (read as
        # latin-1 it would fail with "no EDGE_WEIGHT_TYPE line")
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise InstanceError("file", f"{filename} starts as UTF-16 text but does not "
                                "decode as UTF-16; save it as UTF-8") from None
    try:
        # utf-8-sig drops a leading byte order mark (Windows editors write one), which the
        # parsers would read as part of the first word
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            return data.decode("latin-1")
        except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes any byte
            raise InstanceError("file", f"{filename} is not a text file") from None


def instance_format(filename: str) -> str:
    """'tsplib' for .tsp/.vrp/.vrptw, 'json' for .json (optionally .gz); else a clear error."""
    base, _ = _strip_gz(filename)
    ext = Path(base).suffix.lower()
    if ext in (".tsp", ".vrp", ".vrptw"):
        return "tsplib"
    if ext == ".json":
        return "json"
    # a flow network sent to routing names where it goes
    other = ("; a DIMACS min-cost-flow network goes to `cosolve flow solve` or "
             "POST /v1/flow/min-cost" if ext in (".min", ".dimacs", ".inp", ".net") else "")
    raise UnsupportedFormatError(
        "file",
        f"cannot tell the format of {filename!r}: use .tsp (TSPLIB), .vrp (CVRPLIB/VRPLIB), "
        f".vrptw (LKH-3 CVRPTW) or .json, optionally gzipped (.gz){other}",
    )


# -- reading -----------------------------------------------------------------------------
def read_file_bytes(path: str | Path, max_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> bytes:
    """A regular file's bytes, refused before reading when it is not one (``/dev/zero``, a
    FIFO: reading would never end) or is larger than ``max_bytes``."""
    path = Path(path)
    if path.exists() and not path.is_file() and not path.is_dir():  # callers name folders
        raise InstanceError("file", f"{path} is not a regular file")
    if path.is_file() and path.stat().st_size > max_bytes:
        raise InstanceError("file", f"{path} holds {path.stat().st_size:,} bytes; at most "
                            f"{max_bytes:,} are read")
    return path.read_bytes()


class InstanceFileNotFoundError(InstanceError, FileNotFoundError):
    """``load_instance`` on a path where nothing is: an InstanceError naming the path (not
    a bare FileNotFoundError), still a FileNotFoundError for callers that catch it."""


class InstanceIsADirectoryError(InstanceError, IsADirectoryError):
    """``load_instance`` on a folder: an InstanceError naming the path (not a
    bare IsADirectoryError), still an IsADirectoryError for callers that catch it."""


def load_instance(path: str | Path, max_bytes: int = DEFAULT_MAX_TEXT_BYTES) -> Instance:
    """Read a .tsp, .vrp, .vrptw or .json instance file (plain or .gz).

    Raises InstanceError (a ValueError; ``field`` names the part at fault) for a file that
    is malformed or missing (``InstanceFileNotFoundError``, also a FileNotFoundError), a
    folder (``InstanceIsADirectoryError``), a file larger than ``max_bytes`` or one that is
    not a regular file; UnsupportedFormatError (an InstanceError) for an extension or a
    TSPLIB feature not read; OSError when reading fails otherwise (permissions)."""
    path = Path(path)
    if path.is_dir():
        raise InstanceIsADirectoryError("file", f"{path} is a folder, not an instance file")
    if not path.exists():
        raise InstanceFileNotFoundError("file", f"no such file: {path}")
    return parse_instance_bytes(read_file_bytes(path, max_bytes), path.name, max_bytes=max_bytes)


def parse_instance_bytes(
    data: bytes | str, filename: str, max_bytes: int = DEFAULT_MAX_TEXT_BYTES
) -> Instance:
    """Parse an uploaded or read file by its name's extension; ``data`` is the file's bytes
    (plain or gzipped), or its text (encoded as UTF-8). Raises InstanceError naming the
    field at fault, UnsupportedFormatError for an extension or feature not read."""
    if isinstance(data, str):
        # the gzip check reads bytes: text would fail there with an AttributeError
        data = data.encode("utf-8")
    elif isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    elif not isinstance(data, bytes):
        raise InstanceError("file", f"{filename}: the file's content must be bytes or str, "
                            f"got {type(data).__name__}")
    fmt = instance_format(filename)
    text = decode_bytes(data, filename, max_bytes=max_bytes)
    if fmt == "json":
        obj = load_json(text, filename)
        if not isinstance(obj, dict):
            raise InstanceError("file", "a JSON instance must be an object")
        return instance_from_dict(obj, default_name=Path(_strip_gz(filename)[0]).stem)
    return parse_tsplib_text(text, default_name=Path(_strip_gz(filename)[0]).stem)


def _normalized(text: str) -> tuple[str, str | None]:
    """The text as vrplib reads it reliably, and the file's NAME. vrplib ends a file at any
    line that *contains* "EOF" and starts a section at any line containing "_SECTION", and
    knows section names in capitals only (a COMMENT "GEOFF" cut a CVRP file short
    and it was solved as a TSP; ``NODE_COORD_SECTION:`` escaped the node-id check and
    demands went to the wrong nodes). So: the text stops at its ``EOF`` line, NAME and
    COMMENT lines are blanked (the name is handed back), and section names are written in
    capitals without a trailing colon; every other line keeps its number."""
    lines: list[str] = []
    name = None
    for line in text.splitlines():
        tokens = line.split()
        if not tokens:
            lines.append(line)
            continue
        first = tokens[0].rstrip(":").upper()
        if first == "EOF":
            break
        if first.endswith("_SECTION"):
            rest = tokens[1:]
            if rest and rest[0] == ":":
                rest = rest[1:]
            lines.append(" ".join([first, *rest]))
            continue
        key, sep, value = line.partition(":")
        if sep and key.strip().upper() in ("NAME", "COMMENT"):
            if key.strip().upper() == "NAME" and name is None:
                name = value.strip() or None
            lines.append("")  # blank, so that messages' line numbers stay the file's
            continue
        lines.append(line)
    return "\n".join(lines) + "\n", name


def _header(text: str) -> dict[str, str]:
    """The ``KEY : value`` lines before the first section, so that what we cannot honour is
    refused with a clear message before vrplib sees the data."""
    head: dict[str, str] = {}
    for line in text.splitlines():
        s = line.strip()
        if s.upper().endswith("_SECTION") or s.upper() == "EOF":
            break
        key, sep, value = s.partition(":")
        if sep:
            head[key.strip().upper()] = value.strip()
    return head


#: Largest SCALE accepted: LKH-3's Solomon files use 10; 1e308 made every coordinate
#: infinite, and the error named the coordinates instead of SCALE.
MAX_SCALE = 1_000_000


def _check_supported(head: dict[str, str]) -> None:
    dim = head.get("DIMENSION")
    if dim is not None and not (dim.isdigit() and int(dim) >= 1):
        # vrplib's own int() failure read "invalid literal for int()" under "file"
        raise InstanceError("DIMENSION", f"must be a positive integer, got {dim!r}")
    ewt = head.get("EDGE_WEIGHT_TYPE", "").upper()
    if not ewt:
        raise InstanceError("file", "not a TSPLIB/CVRPLIB file: no EDGE_WEIGHT_TYPE line")
    if ewt not in SUPPORTED_EDGE_WEIGHT_TYPES:
        raise UnsupportedFormatError(
            "EDGE_WEIGHT_TYPE",
            f"EDGE_WEIGHT_TYPE {ewt} is not supported; supported: "
            f"{', '.join(SUPPORTED_EDGE_WEIGHT_TYPES)}",
        )
    fmt = head.get("EDGE_WEIGHT_FORMAT", "").upper()
    if ewt == "EXPLICIT" and fmt not in SUPPORTED_EXPLICIT_FORMATS:
        raise UnsupportedFormatError(
            "EDGE_WEIGHT_FORMAT",
            f"EDGE_WEIGHT_FORMAT {fmt or '(missing)'} is not supported; supported: "
            f"{', '.join(SUPPORTED_EXPLICIT_FORMATS)}",
        )


#: Sections whose rows start with a node id; the reader takes rows by position.
ID_SECTIONS = ("NODE_COORD_SECTION", "DEMAND_SECTION", "TIME_WINDOW_SECTION",
               "SERVICE_TIME_SECTION")


def _check_node_ids(text: str) -> None:
    """The rows of every node section must carry the ids 1, 2, ... in order (as TSPLIB and
    CVRPLIB files do): the reader takes rows by position, so a duplicate or shuffled id would
    otherwise silently become another node (and DEPOT_SECTION, which names ids, another
    depot)."""
    section, expected = None, 1
    for lineno, line in enumerate(text.splitlines(), 1):
        tokens = line.split()
        if not tokens:
            continue
        head = tokens[0].upper()
        if head in ID_SECTIONS:
            section, expected = head, 1
            continue
        if section is None:
            continue
        try:
            node = int(tokens[0])
        except ValueError:
            section = None  # the next keyword or section ends this one
            continue
        if node != expected:
            raise InstanceError(
                section, f"line {lineno}: node id {node} where {expected} was expected (the "
                "rows must list the ids 1..DIMENSION once each, in order)")
        for token in tokens[1:]:
            # ("2 4x9 49" was only "coords: must be a list of number pairs")
            if not _is_number(token):
                raise InstanceError(section, f"line {lineno}: {token!r} is not a number "
                                    f"(node {node})")
        expected += 1


def _edge_weight_section(text: str) -> tuple[str, list[str]]:
    """The text without its EDGE_WEIGHT_SECTION, and that section's values as one stream of
    tokens (TSPLIB lets a matrix's rows wrap over lines; vrplib read each line as a row, so a
    FULL_MATRIX written ten numbers a line was refused as ragged)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if line.strip().upper().startswith("EDGE_WEIGHT_SECTION")), None)
    if start is None:
        return text, []
    tokens = lines[start].split()[1:]
    if tokens and tokens[0] == ":":  # "EDGE_WEIGHT_SECTION :"
        tokens = tokens[1:]
    end = start + 1
    while end < len(lines):
        row = lines[end].split()
        if row:
            if not _is_number(row[0]):
                if not _KEYWORD.match(row[0]):
                    # not the next section or EOF: a stray word inside the weights
                    raise InstanceError("EDGE_WEIGHT_SECTION", f"line {end + 1}: {row[0]!r} "
                                        "is not a number")
                break
            tokens += row
        end += 1
    return "\n".join(lines[:start] + lines[end:]) + "\n", tokens


#: What may follow an EDGE_WEIGHT_SECTION: another section, a KEY : value line, or EOF.
_KEYWORD = re.compile(r"^[A-Z][A-Z0-9_]*:?$")


def explicit_matrix(tokens: list[str], fmt: str, n: int) -> np.ndarray:
    """An n×n matrix from EDGE_WEIGHT_SECTION values in TSPLIB layout ``fmt``. A column-wise
    triangle of a symmetric matrix lists the same values as the other triangle by rows."""
    layout = fmt
    fmt = {"UPPER_COL": "LOWER_ROW", "LOWER_COL": "UPPER_ROW", "UPPER_DIAG_COL":
           "LOWER_DIAG_ROW", "LOWER_DIAG_COL": "UPPER_DIAG_ROW"}.get(fmt, fmt)
    if fmt == "FULL_MATRIX":
        need = n * n
    else:
        diagonal = "DIAG" in fmt
        need = n * (n + 1) // 2 if diagonal else n * (n - 1) // 2
    if len(tokens) != need:
        raise InstanceError("EDGE_WEIGHT_SECTION", f"{len(tokens)} values where a {layout} "
                            f"of DIMENSION {n} has {need}")
    bad = next((t for t in tokens if "_" in t), None)  # float() would read "1_000"
    if bad is None:
        try:
            values = np.array(tokens, dtype=np.float64)
        except ValueError:
            bad = next(t for t in tokens if not _is_number(t))
    if bad is not None:
        raise InstanceError("EDGE_WEIGHT_SECTION", f"{bad!r} is not a number")
    if not np.isfinite(values).all():
        raise InstanceError("EDGE_WEIGHT_SECTION", "the weights must be finite numbers")
    if fmt == "FULL_MATRIX":
        matrix = values.reshape(n, n)
    else:
        matrix = np.zeros((n, n))
        k = 0 if diagonal else 1
        rows, cols = (np.triu_indices(n, k) if fmt.startswith("UPPER")
                      else np.tril_indices(n, -k))
        matrix[rows, cols] = values
        matrix[cols, rows] = values
    if np.array_equal(matrix, np.round(matrix)) and np.abs(matrix).max(initial=0) < 2**53:
        return matrix.astype(np.int64)
    return matrix


def geo_matrix(coords: np.ndarray) -> np.ndarray:
    """TSPLIB's GEO distances: coordinates are DDD.MM (degrees, then minutes over 100),
    latitude first; the Earth an ideal sphere of radius 6378.388 km; every distance truncated
    after adding 1. Degrees are truncated as in TSPLIB's reference code (and Concorde, LKH),
    with its value of pi; burma14's optimum, 3323, comes out exactly."""
    n = len(coords)
    if n > MAX_GEO_NODES:
        raise InstanceError("DIMENSION", f"a GEO file is read as an explicit n×n matrix; at "
                            f"most {MAX_GEO_NODES:,} nodes, got {n:,}")
    if not np.isfinite(coords).all():
        raise InstanceError("NODE_COORD_SECTION", "coordinates must be finite numbers")
    pi = 3.141592
    degrees = np.trunc(coords)
    radians = pi * (degrees + 5.0 * (coords - degrees) / 3.0) / 180.0
    lat, lon = radians[:, 0], radians[:, 1]
    matrix = np.empty((n, n), dtype=np.int64)
    for lo in range(0, n, 1024):  # row blocks: a few n×1024 temporaries, not three n×n
        rows = slice(lo, lo + 1024)
        q1 = np.cos(lon[rows, None] - lon[None, :])
        q2 = np.cos(lat[rows, None] - lat[None, :])
        q3 = np.cos(lat[rows, None] + lat[None, :])
        inner = np.clip(0.5 * ((1.0 + q1) * q2 - (1.0 - q1) * q3), -1.0, 1.0)
        matrix[rows] = np.trunc(6378.388 * np.arccos(inner) + 1.0)
    np.fill_diagonal(matrix, 0)  # TSPLIB's formula gives 1 for a node to itself
    return matrix


def _is_number(token: str) -> bool:
    if "_" in token:  # float() reads "1_000" as 1000; a TSPLIB number has no underscore
        return False
    try:
        float(token)
    except ValueError:
        return False
    return True


def parse_tsplib_text(text: str, default_name: str = "instance") -> Instance:
    """Interpret a TSPLIB/CVRPLIB/VRPLIB text parsed by vrplib as a TSP, CVRP or CVRPTW."""
    text, name = _normalized(text)
    head = _header(text)
    _check_supported(head)
    _check_node_ids(text)
    matrix: np.ndarray | None = None
    if head.get("EDGE_WEIGHT_TYPE", "").upper() == "EXPLICIT":
        text, tokens = _edge_weight_section(text)
        if not tokens:
            raise InstanceError("EDGE_WEIGHT_SECTION", "EDGE_WEIGHT_TYPE EXPLICIT needs an "
                                "EDGE_WEIGHT_SECTION with the weights")
        if "DIMENSION" not in head:
            raise InstanceError("DIMENSION", "an explicit matrix needs DIMENSION")
        matrix = explicit_matrix(tokens, head["EDGE_WEIGHT_FORMAT"].upper(),
                                 int(head["DIMENSION"]))
    try:
        data = parse_vrplib(text, compute_edge_weights=False)
    except Exception as exc:  # vrplib raises bare ValueError/IndexError on malformed text
        if "inhomogeneous" in str(exc):  # numpy's words for a ragged section
            raise InstanceError("file", "could not parse the file: the rows of a section have "
                                "different lengths (e.g. a NODE_COORD_SECTION row short of "
                                "its values)") from None
        raise InstanceError("file", f"could not parse the file: {exc}") from None
    if matrix is not None:
        data["edge_weight"] = matrix
    data["name"] = name
    try:
        return _from_vrplib(data, default_name)
    except InstanceError as exc:
        raise _in_file_terms(exc) from None


#: The instance's 0-based fields and the file sections they come from.
FILE_SECTIONS = {"coords": "NODE_COORD_SECTION", "demands": "DEMAND_SECTION",
                 "time_windows": "TIME_WINDOW_SECTION", "service_times": "SERVICE_TIME_SECTION"}


def _in_file_terms(exc: InstanceError) -> InstanceError:
    """An instance's complaint about ``demands[0]`` as the file's ``DEMAND_SECTION: node 1``
    (errors about a file named 0-based JSON fields, off by one from its ids)."""
    section = FILE_SECTIONS.get(exc.field.partition("[")[0])
    if section is None or type(exc) is not InstanceError:  # not a subclass (format errors)
        return exc
    return InstanceError(section, _row_words(exc))


def norm_matrix(coords: np.ndarray, ewt: str) -> np.ndarray:
    """TSPLIB's MAN_2D (nint(|dx| + |dy|)), MAX_2D (max(nint|dx|, nint|dy|)) and EUC_3D
    (nint of the 3-D distance) as an explicit integer matrix, by row blocks."""
    n = len(coords)
    if n > MAX_GEO_NODES:
        raise InstanceError("DIMENSION", f"a {ewt} file is read as an explicit n×n matrix; at "
                            f"most {MAX_GEO_NODES:,} nodes, got {n:,}")
    dims = 3 if ewt == "EUC_3D" else 2
    if coords.ndim != 2 or coords.shape[1] < dims:
        raise InstanceError("NODE_COORD_SECTION", f"{ewt} needs {dims} coordinates per node")
    c = coords[:, :dims]
    if not np.isfinite(c).all() or np.abs(c).max(initial=0.0) > 1e12:
        raise InstanceError("NODE_COORD_SECTION", "coordinates must be finite numbers within "
                            "±1e12")
    matrix = np.empty((n, n), dtype=np.int64)
    for lo in range(0, n, 1024):
        rows = slice(lo, lo + 1024)
        delta = np.abs(c[rows, None, :] - c[None, :, :])
        if ewt == "MAN_2D":
            block = np.floor(delta.sum(axis=2) + 0.5)
        elif ewt == "MAX_2D":
            block = np.floor(delta + 0.5).max(axis=2)
        else:
            block = np.floor(np.sqrt((delta ** 2).sum(axis=2)) + 0.5)
        matrix[rows] = block
    return matrix


def _from_vrplib(data: dict[str, Any], default_name: str) -> Instance:
    name = str(data.get("name") or default_name)
    problem_type = str(data.get("type", "")).upper().split()[0] if data.get("type") else ""
    ewt = str(data.get("edge_weight_type", "")).upper()
    coords = data.get("node_coord")
    matrix = None
    if ewt == "EXPLICIT":
        matrix = data.get("edge_weight")  # read by explicit_matrix
        if matrix is None or np.ndim(matrix) != 2:
            raise InstanceError("EDGE_WEIGHT_SECTION", "could not read the explicit matrix")
        distance = None
    elif ewt == "GEO":
        if coords is None:
            raise InstanceError("NODE_COORD_SECTION", "GEO needs a NODE_COORD_SECTION")
        matrix = geo_matrix(np.asarray(coords, dtype=np.float64))
        # drawn as longitude east, latitude north (the file gives latitude first)
        coords = np.asarray(coords, dtype=np.float64)[:, ::-1]
        distance = None
    elif ewt in MATRIX_NORMS:
        if coords is None:
            raise InstanceError("NODE_COORD_SECTION", f"{ewt} needs a NODE_COORD_SECTION")
        coords = np.asarray(coords, dtype=np.float64)
        matrix = norm_matrix(coords, ewt)
        coords = coords[:, :2]
        distance = None
    else:
        if coords is None:
            raise InstanceError("NODE_COORD_SECTION", f"{ewt} needs a NODE_COORD_SECTION")
        distance = ewt
    dim = data.get("dimension")
    n = len(coords) if coords is not None else len(matrix) if matrix is not None else None
    if dim is not None and n is not None and int(dim) != n:
        lists = (f"lists {n} nodes" if coords is not None
                 else f"has an EDGE_WEIGHT_SECTION for {n} nodes")
        raise InstanceError("DIMENSION", f"DIMENSION is {dim} but the file {lists}")
    scale = _scale(data, ewt)
    if scale != 1 and coords is not None:
        coords = np.asarray(coords, dtype=np.float64) * scale

    common = dict(name=name, coords=coords, distance_matrix=matrix, distance=distance)
    if problem_type in ("TSP", "ATSP") or (problem_type == "" and "demand" not in data):
        return TSPInstance(**common)
    if problem_type in TIME_WINDOW_TYPES:
        return _time_window_instance(data, common, scale, n)
    if problem_type == "CVRP":
        depot = _single_depot(data, n)
        if "demand" not in data:
            raise InstanceError("DEMAND_SECTION", "a CVRP file needs a DEMAND_SECTION")
        if "capacity" not in data:
            raise InstanceError("CAPACITY", "a CVRP file needs a CAPACITY")
        return CVRPInstance(
            demands=data["demand"],
            capacity=data["capacity"],
            depot=depot,
            max_vehicles=_vehicles(data),
            **common,
        )
    raise UnsupportedFormatError(
        "TYPE", f"TYPE {problem_type or '(missing)'} is not supported; supported: TSP, CVRP, "
        "CVRPTW (or VRPTW)"
    )


def _scale(data: dict[str, Any], ewt: str) -> int:
    """The file's SCALE (LKH-3): distances, windows and service times are multiplied by it."""
    raw = data.get("scale")
    if raw is None:
        return 1
    try:
        scale = float(raw)
    except (TypeError, ValueError):
        raise InstanceError("SCALE", f"must be a positive integer, got {raw!r}") from None
    if not scale.is_integer() or scale < 1:
        raise InstanceError("SCALE", f"must be a positive integer, got {raw!r}")
    if scale > MAX_SCALE:
        raise InstanceError("SCALE", f"must be at most {MAX_SCALE:,}, got {raw!r}")
    if scale != 1 and ewt not in SCALABLE_EDGE_WEIGHT_TYPES:
        raise UnsupportedFormatError(
            "SCALE", f"SCALE is supported with EDGE_WEIGHT_TYPE "
            f"{', '.join(SCALABLE_EDGE_WEIGHT_TYPES)}, not {ewt}"
        )
    return int(scale)


def _vehicles(data: dict[str, Any]) -> int | None:
    """The file's VEHICLES as a whole number (``2.7`` was read as 2 vehicles)."""
    vehicles = data.get("vehicles")
    if vehicles is None:
        return None
    try:
        value = float(vehicles)
    except (TypeError, ValueError):
        raise InstanceError("VEHICLES", f"must be a whole number, got {vehicles!r}") from None
    if not value.is_integer() or value < 1:
        raise InstanceError("VEHICLES", f"must be a whole number of at least 1, got "
                            f"{vehicles!r}")
    return int(value)


def _single_depot(data: dict[str, Any], n: int | None) -> int:
    """The 0-based depot (vrplib subtracts one from the file's id)."""
    depots = np.asarray(data.get("depot", [0])).ravel()
    if depots.size != 1:
        raise UnsupportedFormatError(
            "DEPOT_SECTION", f"exactly one depot is supported, the file lists {depots.size}"
        )
    depot = int(depots[0])
    if n is not None and not 0 <= depot < n:
        raise InstanceError("DEPOT_SECTION", f"depot {depot + 1} is not a node id (1..{n})")
    return depot


def _time_window_instance(data: dict[str, Any], common: dict[str, Any],
                          scale: int, n: int | None) -> CVRPTWInstance:
    """A Solomon-style file: CAPACITY, DEMAND_SECTION, TIME_WINDOW_SECTION, and SERVICE_TIME
    (one value for every customer) or SERVICE_TIME_SECTION (one per node)."""
    for key, section in (("demand", "DEMAND_SECTION"), ("capacity", "CAPACITY"),
                         ("time_window", "TIME_WINDOW_SECTION")):
        if key not in data:
            raise InstanceError(section, f"a CVRPTW file needs a {section}")
    try:
        windows = np.asarray(data["time_window"], dtype=np.float64)
    except ValueError:  # rows of different lengths (numpy: "inhomogeneous shape")
        raise InstanceError("TIME_WINDOW_SECTION", "every row needs a node id and two times "
                            "(earliest, latest)") from None
    if windows.ndim != 2 or windows.shape[1] != 2:
        raise InstanceError("TIME_WINDOW_SECTION", "every row needs a node id and two times "
                            "(earliest, latest)")
    service = data.get("service_time")
    service = np.asarray(service, dtype=np.float64) if service is not None else None
    if service is not None and service.ndim == 2 and service.shape[1] == 1:
        service = service[:, 0]
    _check_unscaled(data, windows, service, n)
    return CVRPTWInstance(
        demands=data["demand"],
        capacity=data["capacity"],
        depot=_single_depot(data, n),
        max_vehicles=_vehicles(data),
        time_windows=windows * scale,
        service_times=service * scale if service is not None else None,
        scale=scale,
        **common,
    )


def _check_unscaled(data: dict[str, Any], windows: np.ndarray, service: np.ndarray | None,
                    n: int | None) -> None:
    """The windows and service times as the file writes them, before SCALE multiplies them:
    an error quotes the value written, under the file's own field (SERVICE_TIME
    -5 with SCALE 10 read "service_times[1]: service time -50 must not be negative")."""
    nodes = len(windows) if n is None else n
    try:
        validate_windows(windows, nodes)
    except InstanceError as exc:
        raise InstanceError("TIME_WINDOW_SECTION", _row_words(exc)) from None
    if service is None:
        return
    try:
        validate_service_times(service if service.ndim else float(service), nodes,
                               _single_depot(data, n))
    except InstanceError as exc:
        section = "SERVICE_TIME" if service.ndim == 0 else "SERVICE_TIME_SECTION"
        raise InstanceError(section, _row_words(exc) if service.ndim else exc.message) from None
