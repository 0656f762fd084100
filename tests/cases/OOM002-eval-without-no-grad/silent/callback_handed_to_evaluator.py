# An evaluation callback handed to a runner defined elsewhere, which decides the grad mode.
from evaluation import run_on_dataset


def export_and_check(traced_model, loader):
    def eval_wrapper(inputs):
        outputs = traced_model(inputs[0]["image"])
        return [{"instances": outputs}]

    return run_on_dataset(eval_wrapper, loader)


def make_evaluator(traced_model):
    def eval_step(inputs):
        return {"scores": traced_model(inputs).softmax(-1).argmax(-1)}

    return eval_step
