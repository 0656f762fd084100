import torch
import torch.nn as nn
import torch.nn.functional as F

def distill(teacher, student, loader, optimizer):
    teacher.eval()
    for x in loader:
        with torch.no_grad():
            target = teacher(x)
        loss = F.mse_loss(student(x), target)
        loss.backward()
        optimizer.step()
