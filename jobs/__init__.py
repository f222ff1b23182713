"""Jobs: solves that outlive a request. A persistent SQLite store, executors that run the
solves in worker processes (locally or on Ray), and the service that ties them together."""
