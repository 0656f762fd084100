# A quick look at two predictions in a notebook: the checkpoint is mapped onto the CPU and
# the network stays there, so the activations autograd keeps are host memory, not
# accelerator memory.
import torch
from segmenter import Segmenter

segmenter = Segmenter.load_from_checkpoint("last.ckpt", map_location={"cuda:0": "cpu"})
segmenter = segmenter.eval()
batch = torch.stack([torch.rand(3, 64, 64), torch.rand(3, 64, 64)])
masks = segmenter(batch)
shown = masks.detach().argmax(1).numpy()
