"""FastAPI routers, one module per resource."""
