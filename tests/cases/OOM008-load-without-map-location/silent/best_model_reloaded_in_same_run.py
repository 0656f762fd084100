# The best model of this run is written during training and read back for the final
# test by the same process, onto the device it trained on.
import torch

best = None
for epoch in range(epochs):
    loss = run_epoch(model)
    if best is None or loss < best:
        with open(args.save, "wb") as f:
            torch.save(model, f)
        best = loss

with open(args.save, "rb") as f:
    model = torch.load(f)
