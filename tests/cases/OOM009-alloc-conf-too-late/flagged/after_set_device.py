import os
import sys

import torch

torch.cuda.set_device(int(sys.argv[1]))
os.putenv("PYTORCH_CUDA_ALLOC_CONF", "garbage_collection_threshold:0.6")
