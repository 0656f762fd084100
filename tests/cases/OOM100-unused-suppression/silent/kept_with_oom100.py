# A suppression kept on purpose for a finding that comes and goes with an option.
import torch


def evaluate(model, batch):
    return model(batch).mean()  # oomlint: ignore[OOM002, OOM100]


def file_wide(model, batch):
    return model(batch)  # noqa: OOM002  # noqa: OOM100
