# Attention-guidance terms, one per region, handed back to a caller that sums them and
# differentiates the latents: the graph is kept on purpose, for one call.
import torch.nn.functional as F


def region_terms(attention, regions, targets):
    inside, outside = [], []
    for region, target in zip(regions, targets):
        patch = attention[:, region]
        inside.append(F.l1_loss(patch.mean(0), target))
        outside.append(F.mse_loss(patch.amax(0), target))
    return inside, outside
