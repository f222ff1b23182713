"""Requests into checked domain input: ``uploads`` reads a body of any family (JSON or
multipart, strictly validated), ``options`` checks what every family's options share, and
``routing``, ``flow`` and ``scheduling`` build each family's tasks."""
