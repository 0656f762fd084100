"""Write `# oomlint: ignore[OOM001]` at the end of the line to silence a finding.

Examples in docstrings and strings are not comments.
"""
import torch

HELP = "append `# noqa: OOM002` to the line"
TEMPLATE = """
losses.append(loss)  # oomlint: ignore
"""


def describe():
    return HELP + TEMPLATE
