# The chunk's forward failed deep inside the network; the handler frees the cache and runs
# the same chunk again while the traceback still pins the failed attempt's activations.
import torch


def run_chunk(model, chunk):
    return model(chunk.cuda()).logits.float().log_softmax(-1)


def score_chunks(model, chunks):
    scores = []
    for chunk in chunks:
        try:
            scores.append(run_chunk(model, chunk))
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            scores.append(run_chunk(model, chunk))
    return scores
