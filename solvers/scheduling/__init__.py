"""Dynamic workflow scheduling on cloud VMs: workflows, a discrete-event simulator, heuristic
rules and the GOODRL graph-attention policy."""
