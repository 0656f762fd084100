import torch
import torch.nn as nn
import torch.nn.functional as F

def train(model, loader, optimizer, criterion):
    history, values, arrays, floats, lists, datas = [], [], [], [], [], []
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        history.append(loss.item())
        values.append(loss.detach())
        arrays.append(loss.detach().cpu().numpy())
        floats.append(float(loss))
        lists.append(model(x).tolist())
        datas.append(loss.data)
