"""Min-cost flow: networks with supplies, arc and node capacities; exact and entropic solvers.

``problem`` holds the network and its validation; ``solution`` the independent flow checker
and the answer every solver returns (``cut`` the proof of an infeasible one); ``io`` reads
and writes JSON and DIMACS files; ``sinkhorn`` is the entropic OFT-Sinkhorn solver in torch;
``repair`` turns its fractional flow into an exactly feasible integer flow with a certified
optimality gap; ``baselines`` wraps OR-Tools and networkx; ``solve`` is the one code path the
API, the CLI and the benchmarks share.
"""
