# A staging buffer grows to fit the next tensor; when the device is full, the spare
# buffer is released and the one resize is tried again. The failure happened inside one
# tensor operation, so the traceback keeps nothing alive that this frame does not hold.
import torch


def ensure_capacity(buffer, spare, needed):
    if needed <= buffer.numel():
        return buffer, spare
    try:
        buffer.resize_(needed)
    except torch.cuda.OutOfMemoryError:
        if spare is None:
            raise
        spare.resize_(0)
        spare = None
        buffer.resize_(needed)
    return buffer, spare
