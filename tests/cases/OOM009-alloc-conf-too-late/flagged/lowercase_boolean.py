from os import environ

environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:true"
