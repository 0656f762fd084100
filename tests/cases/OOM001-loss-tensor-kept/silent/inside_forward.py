import torch
import torch.nn as nn
import torch.nn.functional as F


class MultiCodebookHead(nn.Module):
    def forward(self, hidden, labels=None):
        logits = self.head(hidden)
        loss = 0
        per_codebook = []
        for codebook in range(self.num_codebooks):
            codebook_loss = F.cross_entropy(logits[:, codebook], labels[:, codebook])
            loss += codebook_loss
            per_codebook.append(codebook_loss)
        chunks = []
        for chunk in hidden.split(16, dim=1):
            chunks.append(self.classifier(chunk))
        return {"loss": loss, "logits": torch.cat(chunks, dim=1), "per_codebook": per_codebook}
