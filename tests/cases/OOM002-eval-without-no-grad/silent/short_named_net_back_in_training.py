# A short-named translator is put in eval mode for a quick check under no_grad, then
# switched back and trained in the same function: the later call is a training forward.
import torch
from nets import Translator

to_night = Translator().cuda()
optimizer = torch.optim.Adam(to_night.parameters())


def check_then_train(day_batch, night_batch):
    to_night.eval()
    with torch.no_grad():
        preview = to_night(day_batch)
    to_night.train()
    loss = torch.nn.functional.l1_loss(to_night(day_batch), night_batch)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return preview
