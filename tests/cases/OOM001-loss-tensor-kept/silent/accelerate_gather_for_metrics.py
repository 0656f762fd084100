# An accelerate evaluation loop: losses computed under no_grad, gathered and kept as tensors on purpose.
import torch
from accelerate import Accelerator


def evaluate(model, eval_dataloader, accelerator: Accelerator, metric):
    model.eval()
    losses = []
    for step, batch in enumerate(eval_dataloader):
        with torch.no_grad():
            outputs = model(**batch)
        loss = outputs.loss
        losses.append(accelerator.gather_for_metrics(loss.repeat(batch["input_ids"].shape[0])))
        predictions = outputs.logits.argmax(dim=-1)
        metric.add_batch(predictions=accelerator.gather_for_metrics(predictions), references=batch["labels"])
    losses = torch.cat(losses)
    return torch.mean(losses).item(), metric.compute()


@torch.no_grad()
def generate_samples(model, tokenizer, prompts, max_new_tokens=32):
    model.eval()
    outputs = []
    for prompt in prompts:
        ids = tokenizer(prompt, return_tensors="pt").input_ids.to(model.device)
        outputs.append(model.generate(ids, max_new_tokens=max_new_tokens))
    return outputs
