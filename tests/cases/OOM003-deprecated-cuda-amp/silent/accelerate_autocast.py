from accelerate import Accelerator

accelerator = Accelerator(mixed_precision="bf16")


def train(model, optimizer, loader):
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        with accelerator.autocast():
            loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
