import torch


class Block(torch.nn.Module):
    def forward(self, hidden_states, attention_mask):
        if self.gradient_checkpointing and self.training:
            return torch.utils.checkpoint.checkpoint(self._forward, hidden_states, attention_mask)
        return self._forward(hidden_states, attention_mask)
