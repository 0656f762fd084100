import os

import torch


def train():
    model = torch.nn.Linear(8, 8).cuda()
    return model


def configure():
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "pinned_use_cuda_host_register:True,pinned_num_register_threads:8"


if __name__ == "__main__":
    configure()
    train()
