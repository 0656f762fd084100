# An accelerate evaluation loop without no_grad that keeps each batch's loss tensor.
import torch


def evaluate(model, eval_dataloader, accelerator):
    model.eval()
    losses = []
    for step, batch in enumerate(eval_dataloader):
        outputs = model(**batch)
        loss = outputs.loss
        losses.append(loss)
    return torch.stack(losses).mean().item()
