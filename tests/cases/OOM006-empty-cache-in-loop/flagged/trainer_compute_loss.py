# A Trainer subclass: the framework's own loop calls compute_loss for every batch, so
# the cache is released and refilled on every training step although no loop is in sight.
import torch
from transformers import Trainer


class ContrastiveTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        anchors = model(**inputs["anchor"]).last_hidden_state[:, 0]
        positives = model(**inputs["positive"]).last_hidden_state[:, 0]
        torch.cuda.empty_cache()
        logits = anchors @ positives.T
        labels = torch.arange(len(logits), device=logits.device)
        loss = torch.nn.functional.cross_entropy(logits, labels)
        return (loss, logits) if return_outputs else loss
