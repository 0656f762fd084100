from torch.utils.checkpoint import checkpoint


def forward(layers, x):
    for layer in layers:
        x = checkpoint(lambda t, layer=layer: layer(t), x, use_reentrant=False)
    for block in layers:
        x = checkpoint(lambda t, b=block: b(t), x, use_reentrant=False)
    return x
