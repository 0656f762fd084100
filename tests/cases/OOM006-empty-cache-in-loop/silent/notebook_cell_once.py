# The text of a notebook whose cells run once each, top to bottom.
import torch

model = torch.nn.Linear(4, 4).cuda()
# %% next cell
del model
torch.cuda.empty_cache()
# %% next cell
for name in ["a", "b"]:
    print(name)
torch.cuda.empty_cache()
