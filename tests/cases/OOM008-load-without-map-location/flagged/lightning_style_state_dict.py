# Loading pretrained weights into a LightningModule before fine-tuning.
from torch import load, nn
import lightning as L


class Classifier(L.LightningModule):
    def __init__(self, backbone: nn.Module, weights: str):
        super().__init__()
        self.backbone = backbone
        state = load(weights, weights_only=True)
        self.backbone.load_state_dict(state, strict=False)
