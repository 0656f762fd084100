# A super-resolution validation pass: one image per iteration, the cache released after each.
import torch


class Restorer:
    def validate(self, dataloader):
        for index, sample in enumerate(dataloader):
            self.feed(sample)
            self.run_network()
            self.save_result(index)
            del self.output
            torch.cuda.empty_cache()
