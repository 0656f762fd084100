# A perceptual loss over decoder layers: one term per layer, summed into a name and
# returned for the caller's backward().
import torch.nn.functional as F


def layered_loss(features_a, features_b, weights):
    terms = []
    for level, (a, b) in enumerate(zip(features_a, features_b)):
        terms.append(F.mse_loss(a, b) * weights[level])
    combined = sum(terms)
    return combined / len(terms)
