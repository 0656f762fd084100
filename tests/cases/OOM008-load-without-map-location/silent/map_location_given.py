# Every way of saying where the tensors go.
import torch


def restore(model, path, device, local_rank, kwargs):
    state = torch.load(path, map_location="cpu")
    state = torch.load(path, map_location=device)
    state = torch.load(path, map_location=f"cuda:{local_rank}")
    state = torch.load(path, map_location=lambda storage, loc: storage)
    state = torch.load(path, "cpu")
    state = torch.load(path, map_location=None)
    state = torch.load(path, **kwargs)
    model.load_state_dict(state)
