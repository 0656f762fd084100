# Cutting the target from its graph (a frozen network's estimate) does not cut the
# loss: the online network's prediction still carries this step's graph into the list.
import torch.nn.functional as F


def td_epochs(online, frozen, optimizer, batches):
    history = []
    for states, actions, returns in batches:
        predicted = online(states).gather(1, actions)
        target = returns + 0.99 * frozen(states).max(1)[0].unsqueeze(1)
        loss = F.smooth_l1_loss(predicted, target.detach())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss)
    return history
