# A bare noqa and other linters' codes belong to other tools.
import os  # noqa
import torch  # noqa: F401
from typing import List  # NOQA: F401, E501

very_long_name = "x" * 200  # noqa: E501


def helper(values: List[int]) -> int:  # type: ignore
    return sum(values)  # pylint: disable=unused-argument
