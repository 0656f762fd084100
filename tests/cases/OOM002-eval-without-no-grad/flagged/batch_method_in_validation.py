# The trainer's batch method runs the network; the validation loop calls it with
# autograd on.
import torch


class Runner:
    def _run_batch(self, batch):
        inputs, labels = batch
        return self.model(inputs), labels

    def validate(self, val_loader):
        self.model.eval()
        correct = 0
        for batch in val_loader:
            outputs, labels = self._run_batch(batch)
            correct += (outputs.argmax(1) == labels).sum().item()
        return correct
