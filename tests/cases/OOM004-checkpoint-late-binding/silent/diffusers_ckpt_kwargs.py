# diffusers' down blocks: the module itself is passed, with keyword options splatted.
import torch
from diffusers.utils import is_torch_version


class DownBlock(torch.nn.Module):
    def forward(self, hidden_states, temb=None):
        output_states = ()
        for resnet in self.resnets:
            if self.training and self.gradient_checkpointing:
                ckpt_kwargs = {"use_reentrant": False} if is_torch_version(">=", "1.11.0") else {}
                hidden_states = torch.utils.checkpoint.checkpoint(resnet, hidden_states, temb, **ckpt_kwargs)
            else:
                hidden_states = resnet(hidden_states, temb)
            output_states = output_states + (hidden_states,)
        return hidden_states, output_states
