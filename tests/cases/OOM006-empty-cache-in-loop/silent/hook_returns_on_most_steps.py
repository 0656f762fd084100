# A callback that renders samples every `every` steps: the hook runs for each batch, but
# returns at once on all other steps, so the cache is released once per sampling round.
import torch
import lightning as L


class SampleCallback(L.Callback):
    def __init__(self, prompts, every=500):
        self.prompts = prompts
        self.every = every

    def render(self, module):
        samples = module.sample(self.prompts)
        torch.cuda.empty_cache()
        return samples

    @torch.no_grad()
    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if (trainer.global_step + 1) % self.every != 0:
            return
        module.eval()
        samples = self.render(module)
        torch.cuda.empty_cache()
        trainer.logger.log_image("samples", list(samples))
        module.train()
