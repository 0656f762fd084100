# A project's own `load` helpers and methods named `load`.
import torch


def load(path):
    """Reads a checkpoint to the CPU."""
    return torch.load(path, map_location="cpu")


class Checkpointer:
    def load(self, path):
        return load(path)


def resume(trainer, path):
    state = load(path)
    trainer.checkpointer.load(path)
    trainer.model.load_state_dict(state["model"])
