"""Programs that run on the nodes, inside the job: embedded into sbatch scripts and ConfigMaps.

Each module here is standard library only (plus Ray where it talks to Ray), imports nothing from
ncclgen, and runs as `python3 -c "$PROGRAM" ...` or `python3 file.py ...` on a node that has no
ncclgen installed. `source(name)` returns a module's text for embedding.
"""

import os


def source(name: str) -> str:
    """The text of jobside module ``name`` (e.g. "raywait"), embedded into jobs at render time."""
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py"), encoding="utf-8") as fh:
        return fh.read()
