from torch.cuda import amp

scaler = amp.GradScaler(init_scale=2.0**14)
with amp.autocast(dtype=torch.float16):
    out = model(x)
