# Wrappers that hand a network's prediction back: samplers call them under no_grad,
# guidance and likelihood code differentiates through them. The callers decide.
import torch


class Solver:
    def __init__(self, model_fn):
        self.model = model_fn

    def noise_prediction_fn(self, x, t):
        return self.model(x, t)

    def model_predictions(self, x, t):
        out = self.model(x, t)
        noise, variance = out.chunk(2, dim=1)
        return noise, variance


def get_model_fn(model, train=False):
    def model_fn(x, labels):
        if not train:
            model.eval()
            return model(x, labels)
        model.train()
        return model(x, labels)

    return model_fn
