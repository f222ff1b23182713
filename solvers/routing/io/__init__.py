"""Routing files: TSPLIB, CVRPLIB and Solomon instances, JSON documents, solution files
(.tour, .sol) and known solutions as references. ``load_instance`` is the one entry point for a
path; the API reads uploads through ``parse_instance_bytes``."""

from solvers.routing.io.documents import (
    check_solution_nodes,
    instance_from_dict,
    instance_to_dict,
    solution_to_dict,
)
from solvers.routing.io.formats import (
    InstanceFileNotFoundError,
    InstanceIsADirectoryError,
    instance_format,
    load_instance,
    parse_instance_bytes,
)
from solvers.routing.io.references import (
    reference_cost,
    reference_cost_bytes,
    reference_file_names,
    reference_stem,
    sibling_reference_file,
)
from solvers.routing.io.solutions import (
    read_sol,
    read_tour,
    read_tour_routes,
    sol_from_text,
    sol_text,
    tour_from_text,
    tour_text,
    vrp_tour_routes,
    write_solution_file,
)
from solvers.routing.problem import COORD_CONVENTIONS

__all__ = [
    "COORD_CONVENTIONS",
    "InstanceFileNotFoundError",
    "InstanceIsADirectoryError",
    "check_solution_nodes",
    "instance_format",
    "instance_from_dict",
    "instance_to_dict",
    "load_instance",
    "parse_instance_bytes",
    "read_sol",
    "read_tour",
    "read_tour_routes",
    "reference_cost",
    "reference_cost_bytes",
    "reference_file_names",
    "reference_stem",
    "sibling_reference_file",
    "sol_from_text",
    "sol_text",
    "solution_to_dict",
    "tour_from_text",
    "tour_text",
    "vrp_tour_routes",
    "write_solution_file",
]
