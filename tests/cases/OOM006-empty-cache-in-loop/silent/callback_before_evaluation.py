# A callback that releases the cache only on the steps that are followed by an
# evaluation or a checkpoint: the condition picks a few steps, not all of them.
import gc

import torch
from transformers import TrainerCallback


class ReleaseBeforeEvaluation(TrainerCallback):
    def _release(self):
        gc.collect()
        torch.cuda.empty_cache()

    def on_step_end(self, args, state, control, **kwargs):
        if control.should_evaluate or control.should_save:
            self._release()

    def on_epoch_end(self, args, state, control, **kwargs):
        self._release()
