import torch


@torch.no_grad()
def upscale_tiles(model, tiles):
    outputs = []
    for tile in tiles:
        outputs.append(model(tile.cuda()).cpu())
        torch.cuda.empty_cache()
    return outputs
