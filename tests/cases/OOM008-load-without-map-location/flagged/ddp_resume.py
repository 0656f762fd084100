# A DDP launch script resuming every rank from the checkpoint rank 0 wrote.
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args):
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = build_model(args).cuda(local_rank)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    if args.resume:
        checkpoint = torch.load(args.resume)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        start_epoch = checkpoint["epoch"] + 1
    model = DDP(model, device_ids=[local_rank])
