from torch.cuda.amp import autocast as ac

with ac():
    pass
