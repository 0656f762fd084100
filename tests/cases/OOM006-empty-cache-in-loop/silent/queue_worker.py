# A render worker of a video service: it sleeps on its job queue, renders one clip per
# job, and gives the cache back before waiting again, so the idle worker holds no memory.
import torch


@torch.no_grad()
def render_worker(device, jobs, results, model):
    model.to(device)
    while True:
        job = jobs.get()
        if job is None:
            break
        frames = model.generate(job["prompt"], num_frames=job["frames"])
        results.put(frames.cpu())
        torch.cuda.empty_cache()
