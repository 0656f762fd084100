# Each entry is wrapped for distributed training once, before any step runs.
import gc

import torch


class Strategy:
    def prepare(self, *entries):
        wrapped = []
        for entry in entries:
            wrapped.append(self._init_train_model(entry))
        return wrapped

    def _init_train_model(self, model):
        gc.collect()
        torch.cuda.empty_cache()
        return model
