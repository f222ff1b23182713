"""Routing problems (TSP, CVRP): instances, solutions, checks, files and solvers."""

from solvers.routing.problem import (
    CVRPInstance,
    RoutingInstance,
    Solution,
    TSPInstance,
    build_solution,
)

__all__ = ["CVRPInstance", "RoutingInstance", "Solution", "TSPInstance", "build_solution"]
