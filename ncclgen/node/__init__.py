"""Tools that run on a GPU node: `discover`, `doctor`, `bench`, `monitor`.

They read the node itself (NVML through :mod:`ncclgen.node.nvml`, sysfs through
:mod:`ncclgen.node.sysfs`) instead of the descriptor, so the descriptor can be written from, and checked
against, what is really there.
"""

from __future__ import annotations


class Unavailable(Exception):
    """The node lacks what a tool needs (no GPU, no NVML, no sysfs tree).

    Not bad input, so not a UserError: the CLI reports it in one line with exit status 1, the
    status `doctor` also uses for a failed check.
    """
