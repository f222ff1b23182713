#!/usr/bin/env bash
# VROOM documents over the REST API, by curl: the document goes as the body, unchanged, and
# the options as query parameters, so a client that talks to VROOM talks to cosolve the same
# way. Start the server first (`make serve`), then run this from the repository root:
#
#     bash examples/vrp.sh                          # against http://127.0.0.1:8000
#     COSOLVE_URL=http://host:8000 bash examples/vrp.sh
#
# A request that fails stops the script (curl --fail-with-body), except the last one, which
# shows a refusal on purpose.
set -euo pipefail

URL=${COSOLVE_URL:-http://127.0.0.1:8000}
DOC=examples/vrp_request.json
PY=${PYTHON:-python3}
TIME_LIMIT=${TIME_LIMIT:-1}

call() { curl -sS --fail-with-body -H 'content-type: application/json' "$@"; }

echo "== the solvers that take VROOM documents, and which parts of the model each takes"
curl -sS --fail-with-body "$URL/v1/solvers?problem=vrp" | "$PY" -c 'import json, sys
for s in json.load(sys.stdin)["solvers"]:
    print("  %-8s %s" % (s["name"], ",".join(s["vrp_features"])))'

echo "== solve with vroom: VROOM's output document, checked, a reason for each unassigned task"
call "$URL/v1/routing/vrp/solve?solver=vroom&time_limit=$TIME_LIMIT&geometry=geojson" \
    --data-binary @$DOC | "$PY" -c 'import json, sys
doc = json.load(sys.stdin)
s = doc["summary"]
print("  cost %s, %s routes, %s unassigned, duration %s s, waiting %s s" % (
    s["cost"], s["routes"], s["unassigned"], s["duration"], s["waiting_time"]))
print("  checked: feasible=%s" % doc["cosolve"]["check"]["feasible"])
for route in doc["routes"]:
    stops = " ".join("%s%s@%s" % (st["type"][0], st.get("id", ""), st["arrival"])
                     for st in route["steps"])
    print("  vehicle %s: %s" % (route["vehicle"], stops))
for task in doc["unassigned"]:
    print("  unassigned %s %s: %s" % (task["type"], task["id"], task["reason"]))
kinds = sorted({f["geometry"]["type"] for f in doc["geojson"]["features"]})
print("  geojson: %d features (%s)" % (len(doc["geojson"]["features"]), ", ".join(kinds)))'

echo "== every solver of VROOM documents at equal time (one that lacks a part says which)"
call "$URL/v1/routing/vrp/compare?time_limit=$TIME_LIMIT" \
    --data-binary @$DOC | "$PY" -c 'import json, sys
doc = json.load(sys.stdin)
for row in doc["rows"]:
    print("  %-8s cost %s, unassigned %s, feasible=%s%s" % (
        row["solver"], row["cost"], row["unassigned"], row["feasible"],
        "  (%s)" % row["error"] if row.get("error") else ""))
print("  best:", doc["best_solver"])'

echo "== a refused document: a job at a location the matrix does not have"
curl -sS -H 'content-type: application/json' "$URL/v1/routing/vrp/solve" -d '{
  "vehicles": [{"id": 1, "start_index": 0}],
  "jobs": [{"id": 1, "location_index": 5}],
  "matrices": {"car": {"durations": [[0, 4], [4, 0]]}}}' | "$PY" -c 'import json, sys
doc = json.load(sys.stdin)
print("  %s %s: %s" % (doc["status"], doc["field"], doc["detail"]))'
