import torch
import torch.nn as nn
import torch.nn.functional as F

import lightning as L


class LitModel(L.LightningModule):
    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.model(x), y)
        self.validation_step_outputs.append(loss)
