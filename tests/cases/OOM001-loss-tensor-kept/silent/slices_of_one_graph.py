import torch


def decode(model, images, batch_size):
    logits = model(images)
    probabilities = logits.softmax(-1)
    kept = []
    for index in range(batch_size):
        kept.append(probabilities[index])
    return kept
