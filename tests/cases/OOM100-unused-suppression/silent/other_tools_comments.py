# Comments for other tools, and an oomlint directive spelled in prose, are not ours.
import torch  # noqa: F401  # isort: skip
from typing import Any  # type: ignore[attr-defined]

# The README explains how oomlint: suppression comments work.
CONFIG: Any = {"ignore": ["OOM001"]}  # pylint: disable=invalid-name
