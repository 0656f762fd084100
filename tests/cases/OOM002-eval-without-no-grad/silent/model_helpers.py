import torch


class Trainer:
    def evaluation_loop(self, dataloader):
        model = self._wrap_model(self.model, training=False)
        encoder = build_encoder(self.config)
        for batch in dataloader:
            with torch.no_grad():
                model(batch)
        return encoder
