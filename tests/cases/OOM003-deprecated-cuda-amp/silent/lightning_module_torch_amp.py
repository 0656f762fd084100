import lightning as L
import torch


class LitClassifier(L.LightningModule):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.scaler = torch.amp.GradScaler("cuda")

    def training_step(self, batch, batch_idx):
        images, labels = batch
        with torch.amp.autocast("cuda", dtype=torch.float16):
            logits = self.model(images)
        return torch.nn.functional.cross_entropy(logits, labels)
