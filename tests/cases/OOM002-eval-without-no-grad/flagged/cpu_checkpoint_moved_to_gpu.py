# The checkpoint is read onto the CPU, but the network is moved to the GPU before it
# runs: the evaluation forward keeps its activations in accelerator memory.
import torch
from segmenter import Segmenter

segmenter = Segmenter.load_from_checkpoint("last.ckpt", map_location="cpu")
segmenter.to("cuda")
segmenter.eval()
for batch in val_loader:
    masks = segmenter(batch.cuda())
    print(masks.argmax(1).float().mean().item())
