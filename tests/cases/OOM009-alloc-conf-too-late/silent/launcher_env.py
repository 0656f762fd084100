# A launcher: the variable goes into the environment of the training processes it starts.
import os
import subprocess

import torch


def launch(script, gpus):
    torch.cuda.synchronize()
    env = dict(os.environ)
    env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    return subprocess.run(["torchrun", f"--nproc_per_node={gpus}", script], env=env, check=True)
