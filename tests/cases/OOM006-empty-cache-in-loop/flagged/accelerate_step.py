import torch


def train_loop(accelerator, transformer, train_dataloader, optimizer):
    for epoch in range(3):
        for step, batch in enumerate(train_dataloader):
            with accelerator.accumulate(transformer):
                latents = batch["latents"].to(accelerator.device)
                torch.cuda.empty_cache()
                loss = transformer(latents).mean()
                accelerator.backward(loss)
                optimizer.step()
                optimizer.zero_grad()
