"""cosolve's domain: problems, file formats, solvers and their registry."""
