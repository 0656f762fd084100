# A Hugging Face-style trainer restoring optimizer and scheduler state.
import os

import torch


class Trainer:
    def _load_optimizer_and_scheduler(self, checkpoint):
        self.optimizer.load_state_dict(torch.load(os.path.join(checkpoint, "optimizer.pt")))
        self.lr_scheduler.load_state_dict(
            torch.load(
                os.path.join(checkpoint, "scheduler.pt"),
            )
        )
