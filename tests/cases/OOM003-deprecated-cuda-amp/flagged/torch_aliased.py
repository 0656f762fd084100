import torch as T

with T.cuda.amp.autocast():
    pass
scaler = T.cuda.amp.GradScaler()
