"""Routing problems (TSP, CVRP, CVRPTW): instances, solutions, checks, files and solvers."""

from solvers.routing.problem import CVRPInstance, CVRPTWInstance, RoutingInstance, TSPInstance
from solvers.routing.solution import Solution, build_solution

__all__ = ["CVRPInstance", "CVRPTWInstance", "RoutingInstance", "Solution", "TSPInstance",
           "build_solution"]
