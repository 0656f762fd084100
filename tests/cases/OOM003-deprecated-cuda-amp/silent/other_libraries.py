from apex import amp
from mylib.cuda.amp import autocast

model, optimizer = amp.initialize(model, optimizer)
with autocast():
    pass
