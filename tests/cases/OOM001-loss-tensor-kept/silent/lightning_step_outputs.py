# Lightning 2.x collects step outputs for the epoch-end hook: detached in training, and validation runs without grad.
import lightning as L
import torch
import torch.nn.functional as F


class LitClassifier(L.LightningModule):
    def __init__(self, backbone):
        super().__init__()
        self.backbone = backbone
        self.training_step_outputs = []
        self.validation_step_outputs = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.backbone(x), y)
        self.training_step_outputs.append(loss.detach())
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self.backbone(x)
        loss = F.cross_entropy(logits, y)
        self.validation_step_outputs.append(loss)
        return loss

    def test_step(self, batch, batch_idx):
        x, y = batch
        return {"test_loss": F.cross_entropy(self.backbone(x), y)}

    def predict_step(self, batch, batch_idx):
        return self.backbone(batch[0]).softmax(-1)

    def on_validation_epoch_end(self):
        epoch_average = torch.stack(self.validation_step_outputs).mean()
        self.log("validation_epoch_average", epoch_average)
        self.validation_step_outputs.clear()
