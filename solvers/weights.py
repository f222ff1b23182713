"""Where the shipped checkpoints live: ``weights/`` at the top of the repository (the
Dockerfile copies it beside the packages), found from this file so any working directory
works."""

from pathlib import Path

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "weights"
