"""Routing problems (TSP, CVRP, CVRPTW): instances, solutions, checks, files and solvers."""

from solvers.routing.problem import (
    CVRPInstance,
    CVRPTWInstance,
    RoutingInstance,
    Solution,
    TSPInstance,
    build_solution,
)

__all__ = ["CVRPInstance", "CVRPTWInstance", "RoutingInstance", "Solution", "TSPInstance",
           "build_solution"]
