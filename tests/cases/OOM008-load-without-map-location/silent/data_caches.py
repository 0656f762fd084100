# Caches of preprocessed data the project writes itself, from CPU tensors.
import os

import torch
from torch.utils.data import Dataset


def tokenized_corpus(folder, encode):
    stored = os.path.join(folder, "cache.pt")
    if os.path.exists(stored):
        return torch.load(stored)
    corpus = encode(folder)
    torch.save(corpus, stored)
    return corpus


def embeddings_for(image_path, compute):
    if os.path.exists(image_path + ".emb"):
        embeddings = torch.load(image_path + ".emb")
    else:
        embeddings = compute(image_path)
        torch.save(embeddings, image_path + ".emb")
    return embeddings


class SpectrogramSet(Dataset):
    def __init__(self, files):
        self.files = files

    def __getitem__(self, i):
        return torch.load(self.files[i])


samples = torch.load("prepared_data.pt")
