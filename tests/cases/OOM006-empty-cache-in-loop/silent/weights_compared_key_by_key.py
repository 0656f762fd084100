# Matching the weights of two checkpoints by value: the loop scores pairs of tensors it
# already holds with a distance from torch.nn.functional; no network runs, no step.
import gc

import torch
import torch.nn.functional as F


def release():
    torch.cuda.empty_cache()
    gc.collect()


def match_keys(old_state, new_state, tolerance=1e-6):
    mapping = {}
    for old_key, old_weight in old_state.items():
        for new_key, new_weight in new_state.items():
            if new_key in mapping.values() or old_weight.shape != new_weight.shape:
                continue
            distance = F.mse_loss(old_weight.float(), new_weight.float())
            if distance < tolerance:
                mapping[old_key] = new_key
                release()
                break
    return mapping
