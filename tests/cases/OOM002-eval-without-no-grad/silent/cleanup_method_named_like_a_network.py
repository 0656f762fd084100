# An evaluation harness compares two policies one after the other and releases the first
# before loading the second. The release method's name ends like a network's, but its body
# runs no forward pass: it only drops references and returns memory to the allocator.
import gc

import torch


class Comparison:
    def __init__(self, load):
        self.load = load

    def _release_policy(self, policy, label):
        print(f"releasing {label}")
        del policy
        gc.collect()
        torch.cuda.empty_cache()

    def evaluate(self, observations):
        baseline = self.load("baseline")
        baseline.eval()
        with torch.no_grad():
            first = baseline(observations)
        self._release_policy(baseline, "baseline")
        return first
