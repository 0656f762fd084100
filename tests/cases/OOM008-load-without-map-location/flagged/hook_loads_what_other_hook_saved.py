# One hook saves extra heads from the GPU; the load hook, run on every rank when
# resuming, reads them back without a map_location.
import os

import torch


def save_hook(models, output_dir, heads):
    torch.save(heads.state_dict(), os.path.join(output_dir, "heads.pt"))


def load_hook(models, input_dir, heads):
    heads.load_state_dict(torch.load(os.path.join(input_dir, "heads.pt")))
