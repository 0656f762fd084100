import os

import torch


def main(build_model):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = build_model().to(device)
    os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128")
    return model


if __name__ == "__main__":
    main(lambda: torch.nn.Linear(8, 8))
