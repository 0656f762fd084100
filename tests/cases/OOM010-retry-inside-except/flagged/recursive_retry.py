import torch


def generate(self, prompts, max_batch):
    try:
        return self.model.generate(prompts[:max_batch])
    except torch.cuda.OutOfMemoryError:
        torch.cuda.empty_cache()
        return generate(self, prompts, max_batch // 2)
