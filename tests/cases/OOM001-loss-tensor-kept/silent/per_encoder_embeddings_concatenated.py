# One embedding per text encoder, joined before the call returns: the list lives for
# one call, and the caller decides whether the joined tensor needs its graph.
import torch


def embed_prompt(encoders, token_ids):
    pieces = []
    for encoder, ids in zip(encoders, token_ids):
        hidden = encoder(ids, output_hidden_states=True).hidden_states[-2]
        pieces.append(hidden)
    joined = torch.cat(pieces, dim=-1)
    return joined
