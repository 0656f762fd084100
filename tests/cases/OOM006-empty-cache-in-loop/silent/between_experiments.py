import torch


def sweep(build, train_one_run, learning_rates):
    results = {}
    for lr in learning_rates:
        net = build()
        results[lr] = train_one_run(net, lr)
        del net
        torch.cuda.empty_cache()
    return results
