import torch
import torch.nn as nn
import torch.nn.functional as F

def evaluate(model, eval_dataloader):
    model.eval()
    eval_losses = []
    for batch in eval_dataloader:
        outputs = model(**batch)
        eval_losses.extend([outputs.loss])
    return eval_losses
