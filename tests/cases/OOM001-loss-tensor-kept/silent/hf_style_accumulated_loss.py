# A Hugging Face-style loop: the loss accumulated detached, logged as a number.
import torch


def train_hf_style(model, dataloader, optimizer, scheduler, args):
    tr_loss = torch.tensor(0.0, device=args.device)
    logs = []
    for step, batch in enumerate(dataloader):
        outputs = model(**batch)
        loss = outputs.loss / args.gradient_accumulation_steps
        loss.backward()
        tr_loss += loss.detach()
        if (step + 1) % args.gradient_accumulation_steps == 0:
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            logs.append({"loss": tr_loss.item() / (step + 1), "lr": scheduler.get_last_lr()[0]})
    return logs
