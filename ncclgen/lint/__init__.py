"""Step 3 of load -> plan -> lint -> render: check settings against what NCCL, PyTorch and the net
plugins really read (the knowledge base in ncclgen/data/kb), for `ncclgen lint` and for every plan."""

from .linter import (CODES, SEVERITIES, Finding, counts, detect, format_json, format_text, is_relevant,
                     lint_environ, lint_pairs, lint_text, parse_text, read_input, target_label)

__all__ = ["CODES", "SEVERITIES", "Finding", "counts", "detect", "format_json", "format_text", "is_relevant",
           "lint_environ", "lint_pairs", "lint_text", "parse_text", "read_input", "target_label"]
