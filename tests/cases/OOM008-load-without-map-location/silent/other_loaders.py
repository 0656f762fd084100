# Loaders that share the name but are not torch.load.
import json
import pickle

import numpy as np
import torch
import yaml
from safetensors.torch import load_file


def read_everything(path):
    config = json.load(open(path + "/config.json"))
    stats = pickle.load(open(path + "/stats.pkl", "rb"))
    mean = np.load(path + "/mean.npy")
    scripted = torch.jit.load(path + "/model.ts")
    weights = load_file(path + "/model.safetensors")
    extra = yaml.safe_load(open(path + "/extra.yaml"))
    return config, stats, mean, scripted, weights, extra
