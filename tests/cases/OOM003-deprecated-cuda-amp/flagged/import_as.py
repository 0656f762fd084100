import torch.cuda.amp as amp_mod

scaler = amp_mod.GradScaler()
