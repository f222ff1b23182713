#!/usr/bin/env bash
# A first session with the REST API, by curl. Start the server first (`make serve`), then run
# this from the repository root:
#
#     bash examples/curl.sh                         # against http://127.0.0.1:8000
#     COSOLVE_URL=http://host:8000 bash examples/curl.sh
#
# Each step prints the part of the answer that matters; drop the `| field ...` filter to see
# the whole JSON document. A request that fails stops the script (curl --fail-with-body).
set -euo pipefail

URL=${COSOLVE_URL:-http://127.0.0.1:8000}
DATA=tests/data
PY=${PYTHON:-python3}

# Print the named fields of the JSON document on stdin (dotted paths: solution.cost).
field() {
    "$PY" -c 'import json, sys
doc = json.load(sys.stdin)
for path in sys.argv[1:]:
    value = doc
    for key in path.split("."):
        value = value[int(key)] if isinstance(value, list) else value[key]
    print(f"  {path}: {value}")' "$@"
}

call() { curl -sS --fail-with-body "$@"; }

echo "== the solvers that can run here"
call "$URL/v1/solvers" | "$PY" -c 'import json, sys
for s in json.load(sys.stdin)["solvers"]:
    print("  %-18s %-16s available=%s" % (s["name"], ",".join(s["problems"]), s["available"]))'

echo "== a 5-node TSP as JSON"
call "$URL/v1/routing/tsp/solve" -H 'content-type: application/json' -d '{
  "instance": {"coords": [[0,0],[3,0],[3,4],[0,4],[1,2]]},
  "solver": "ortools", "time_limit": 1, "seed": 0}' | field tour cost feasible

echo "== a CVRPLIB file as an upload"
call "$URL/v1/routing/cvrp/solve" -F file=@$DATA/X-n101-k25.vrp -F solver=pyvrp \
    -F time_limit=1 | field cost feasible wall_time

echo "== two solvers on the same file, gaps to its known solution (checked by the server)"
call "$URL/v1/routing/cvrp/compare" -F file=@$DATA/X-n101-k25.vrp -F solvers=ortools,pyvrp \
    -F time_limit=1 -F reference_file=@$DATA/X-n101-k25.sol |
    "$PY" -c 'import json, sys
doc = json.load(sys.stdin)
print("  reference:", doc["reference"], "from", doc["reference_file"])
for row in doc["rows"]:
    print("  %-8s cost %s  gap %.2f %%" % (row["solver"], row["cost"], row["gap_to_reference"]))'

echo "== a job: submit, wait, fetch the tour (TSPLIB .tour)"
ID=$(call "$URL/v1/jobs" -F file=@$DATA/berlin52.tsp -F solver=ortools -F time_limit=1 |
    "$PY" -c 'import json, sys; print(json.load(sys.stdin)["id"])')
echo "  job $ID"
for _ in $(seq 60); do
    STATE=$(call "$URL/v1/jobs/$ID" | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["state"])')
    case $STATE in queued|running) sleep 0.5 ;; *) break ;; esac
done
echo "  state: $STATE"
TOUR=$(call "$URL/v1/jobs/$ID/solution?format=tour")
printf "%s\n" "$TOUR" | sed -n 1,6p
