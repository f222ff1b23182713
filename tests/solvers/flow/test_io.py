"""DIMACS and JSON files: reading the NETGEN files, round trips, errors that name the line."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from solvers.errors import InstanceError, UnsupportedFormatError
from solvers.flow.io import (
    dimacs_text,
    load_network,
    network_from_dict,
    parse_dimacs,
    parse_dimacs_solution,
    parse_network_bytes,
    solution_dimacs_text,
)
from solvers.flow.solution import build_flow_solution, check_flow
from tests.solvers.flow.conftest import HAND_CHECKED, netgen_path

TINY = """c a tiny network
p min 4 5
n 1 4
n 4 -4
a 1 2 0 3 1
a 2 4 0 10 1
a 1 3 0 10 3
a 3 4 0 10 1
a 1 4 0 10 9
"""


def test_reads_the_netgen_files() -> None:
    net = load_network(netgen_path("netgen_8_08a"))
    assert (net.name, net.n, net.m) == ("netgen_8_08a", 256, 2048)
    assert net.total_supply == 16000 and int(net.supplies.sum()) == 0
    assert net.capacitated.all() and net.costs.min() >= 1 and net.costs.max() <= 10000
    big = load_network(netgen_path("netgen_8_10a"))
    assert (big.n, big.m, big.total_supply) == (1024, 8192, 32000)


def test_dimacs_round_trip() -> None:
    net = load_network(netgen_path("netgen_8_08a"))
    again = parse_dimacs(dimacs_text(net), name=net.name)
    for attr in ("supplies", "tails", "heads", "costs", "capacities", "lower"):
        assert np.array_equal(getattr(net, attr), getattr(again, attr)), attr


def test_gzip_and_plain_give_the_same_network() -> None:
    plain = parse_network_bytes(TINY.encode(), "tiny.min")
    zipped = parse_network_bytes(gzip.compress(TINY.encode()), "tiny.min.gz")
    assert np.array_equal(plain.costs, zipped.costs) and plain.name == zipped.name == "tiny"


def test_dimacs_lower_bounds_are_read() -> None:
    text = TINY.replace("a 1 3 0 10 3", "a 1 3 1 10 3")
    net = parse_dimacs(text)
    assert net.lower.tolist() == [0, 0, 1, 0, 0]


@pytest.mark.parametrize(("text", "field", "words"), [
    ("a 1 2 0 1 1\n", "line 1", "before the 'p min' line"),
    ("p max 2 1\n", "line 1", "min-cost-flow files"),
    ("p min 2 2\nn 1 1\nn 2 -1\na 1 2 0 3 1\n", "line 1", "announces 2 arcs"),
    ("p min 2 1\nn 3 1\na 1 2 0 3 1\n", "line 2", "outside 1..2"),
    ("p min 2 1\nn 1 1\nn 2 -1\na 1 2 0 3 x\n", "line 4", "COST must be an integer"),
    ("p min 2 1\nn 1 1\nn 2 -1\na 1 2 0 3\n", "line 4", "5 numbers"),
    ("p min 2 1\nn 1 1\nn 2 -1\na 1 5 0 3 1\n", "line 4", "unknown node id 5"),
    ("p min 2 1\nn 1 1\nn 2 -1\na 1 2 4 3 1\n", "line 4", "below the lower bound"),
    ("p min 2 1\nn 1 2\nn 2 -1\na 1 2 0 3 1\n", "supplies", "unbalanced"),
    ("p min 2 1\nn 1 1\nn 1 1\n", "line 3", "already has a supply"),
    ("c nothing\n", "file", "no 'p min"),
    ("p min 2 1\nx 1\n", "line 2", "unknown line type"),
    # past int64 was numpy's OverflowError (a traceback from the CLI)
    ("p min 2 1\nn 1 99999999999999999999\nn 2 -5\na 1 2 0 10 3\n", "line 2",
     "SUPPLY 99999999999999999999 is out of range"),
    ("p min 2 1\nn 1 5\nn 2 -5\na 1 2 0 99999999999999999999 3\n", "line 4",
     "CAP 99999999999999999999 is out of range"),
])
def test_dimacs_errors_name_the_line(text: str, field: str, words: str) -> None:
    with pytest.raises(InstanceError) as exc:
        parse_dimacs(text)
    assert exc.value.field == field, exc.value
    assert words in exc.value.message


@pytest.mark.parametrize(("arcs", "line", "got"), [
    # 4 + 6 fields: the right total, so the whole-file reshape shifted the columns silently
    # (before: exit 0, arc 1→2 read with cost 9, taken from line 5)
    (["a 1 2 0 5", "a 9 2 3 0 10 1"], 4, 4),
    (["a 1 2 0 5 1 9", "a 2 3 0 10"], 4, 6),
    # the bad line after clean ones, and a count that is off in total too
    (["a 1 2 0 5 1", "a 2 3 0 10 1", "a 1 3 0 10"], 6, 4),
])
def test_an_arc_line_with_the_wrong_field_count_is_named(arcs: list[str], line: int,
                                                         got: int) -> None:
    text = "\n".join([f"p min 3 {len(arcs)}", "n 1 5", "n 3 -5", *arcs]) + "\n"
    with pytest.raises(InstanceError) as exc:
        parse_dimacs(text)
    assert exc.value.field == f"line {line}", exc.value
    assert exc.value.message == f"expected 'a FROM TO LOW CAP COST' (5 numbers), got {got}"


def test_the_fast_arc_reader_counts_fields_as_split_does() -> None:
    """Tabs, runs of spaces and trailing blanks are one gap each, as for str.split(); a
    non-ASCII space (no byte count) takes the line-by-line reader, with the same result."""
    spaced = TINY.replace("a 1 2 0 3 1", "a\t1  2 0\t3 1   ").replace("a 1 4 0 10 9",
                                                                       "a 1 4 0 10\u00a09")
    net, plain = parse_dimacs(spaced), parse_dimacs(TINY)
    for attr in ("tails", "heads", "lower", "capacities", "costs"):
        assert np.array_equal(getattr(net, attr), getattr(plain, attr)), attr


def test_dimacs_takes_a_whole_number_written_as_a_decimal_as_json_does() -> None:
    """Regression: a JSON network took "capacity": 10.0 and DIMACS refused 10.0 ("CAP must be
    an integer"); both read it as 10 now, exactly (no float rounding), and 10.5 stays an
    error naming the line."""
    text = ("p min 4.0 5\nn 1 4.0\nn 4 -4\na 1 2 0 3.0 1\na 2 4 0 1e1 1\n"
            "a 1 3 0.0 10.00 3\na 3 4 0 10 +1.0\na 1 4 0 10 9E0\n")
    net, plain = parse_dimacs(text), parse_dimacs(TINY)
    for attr in ("supplies", "tails", "heads", "lower", "capacities", "costs"):
        assert np.array_equal(getattr(net, attr), getattr(plain, attr)), attr
    as_json = network_from_dict({"nodes": 2, "supplies": [5.0, -5], "arcs": [
        {"tail": 1, "head": 2, "cost": 1.0, "capacity": 10.0}]})
    as_dimacs = parse_dimacs("p min 2 1\nn 1 5.0\nn 2 -5\na 1 2 0 10.0 1.0\n")
    for attr in ("supplies", "capacities", "costs"):
        assert np.array_equal(getattr(as_json, attr), getattr(as_dimacs, attr)), attr


@pytest.mark.parametrize(("token", "words"), [
    ("10.5", "CAP must be an integer, got '10.5'"),
    ("1e-3", "CAP must be an integer, got '1e-3'"),
    ("10.0000000000000001", "CAP must be an integer, got '10.0000000000000001'"),  # float: 10.0
    ("nan", "CAP must be an integer, got 'nan'"),
    ("inf", "CAP must be an integer, got 'inf'"),
    ("4.0.0", "CAP must be an integer, got '4.0.0'"),
    # an exponent is not expanded into a billion digits before the range check
    ("1e999999999", "CAP 1e999999999 is out of range"),
    ("4611686018427387904.0", "CAP 4611686018427387904.0 is out of range"),
])
def test_dimacs_refuses_a_decimal_that_is_not_a_whole_int64(token: str, words: str) -> None:
    with pytest.raises(InstanceError) as exc:
        parse_dimacs(f"p min 2 1\nn 1 1\nn 2 -1\na 1 2 0 {token} 1\n")
    assert (exc.value.field, exc.value.message) == ("line 4", words)


def test_unknown_extension_is_refused() -> None:
    with pytest.raises(UnsupportedFormatError) as info:
        parse_network_bytes(TINY.encode(), "tiny.tsp")
    assert "cosolve solve" in info.value.message  # a routing file: where it goes instead


def test_a_flow_network_sent_to_routing_says_where_it_goes() -> None:
    from solvers.routing.io.formats import instance_format

    with pytest.raises(UnsupportedFormatError) as info:
        instance_format("netgen.min.gz")
    assert "cosolve flow solve" in info.value.message
    with pytest.raises(UnsupportedFormatError) as info:
        instance_format("notes.txt")
    assert "flow" not in info.value.message


def test_solution_lines_round_trip_through_the_checker() -> None:
    net = parse_dimacs(TINY)
    sol = build_flow_solution(net, np.array([3, 3, 1, 1, 0]), solver="hand", wall_time=0.0,
                              proven_optimal=True)
    text = solution_dimacs_text(sol, net)
    assert "s 10" in text.splitlines() and "f 1 2 3" in text.splitlines()
    assert not any(line.startswith("f 1 4") for line in text.splitlines())  # zero flows left out
    claimed, flow = parse_dimacs_solution(text, net)
    assert claimed == 10 and flow.tolist() == [3, 3, 1, 1, 0]
    assert check_flow(net, flow) == (10, [])


def test_solution_lines_spread_parallel_arcs_cheapest_first() -> None:
    net = network_from_dict(HAND_CHECKED["parallel_isolated"][0])
    _, flow = parse_dimacs_solution("s 8\nf 1 2 4\n", net)
    assert flow.tolist() == [2, 2]
    assert check_flow(net, flow) == (8, [])
    with pytest.raises(InstanceError) as exc:
        parse_dimacs_solution("s 8\nf 2 1 4\n", net)
    assert exc.value.field == "line 2" and "no arc 2→1" in exc.value.message


def test_node_capacities_cannot_be_written_as_dimacs() -> None:
    net = network_from_dict(HAND_CHECKED["node_capacity"][0])
    with pytest.raises(InstanceError) as exc:
        dimacs_text(net)
    assert exc.value.field == "node_capacities"
