import torch
import torch.nn as nn
import torch.nn.functional as F

import lightning as L


class LitClassifier(L.LightningModule):
    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self.model(x), y))

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_acc", (self.model(x).argmax(1) == y).float().mean())

    def predict_step(self, batch, batch_idx):
        return self.model(batch)
