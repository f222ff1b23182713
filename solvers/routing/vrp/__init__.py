"""Rich vehicle routing in VROOM's JSON format: fleets, time windows, shipments, skills,
breaks and matrices; an independent checker; reasons for unassigned tasks; solvers."""
