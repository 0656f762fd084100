from torch.utils import checkpoint as ckpt


def forward_chunk(fn, x, mask):
    return ckpt.checkpoint(fn, x, mask, preserve_rng_state=False)
