# Hugging Face's create_custom_forward binds the layer when it is called, not when the closure runs.
import torch
from torch.utils.checkpoint import checkpoint


class Encoder(torch.nn.Module):
    def forward(self, hidden_states, attention_mask=None):
        for i, layer_module in enumerate(self.layer):
            if self.gradient_checkpointing and self.training:

                def create_custom_forward(module):
                    def custom_forward(*inputs):
                        return module(*inputs, output_attentions=False)

                    return custom_forward

                layer_outputs = torch.utils.checkpoint.checkpoint(
                    create_custom_forward(layer_module), hidden_states, attention_mask, use_reentrant=False
                )
            else:
                layer_outputs = layer_module(hidden_states, attention_mask)
            hidden_states = layer_outputs[0]
        return hidden_states
