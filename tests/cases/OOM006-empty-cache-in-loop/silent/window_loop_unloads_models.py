# A long video made window by window: each window extracts its guide with a pose model,
# runs the whole diffusion sampling, and unloads every model before the next window.
# The cache release sits between those phases, once per multi-minute window.
import gc

import torch


def make_video(pipeline, pose_model, offloader, windows):
    clips = []
    for window in windows:
        pose_model.to("cuda")
        guide = pose_model(window.frames.cuda())
        pose_model.to("cpu")
        gc.collect()
        torch.cuda.empty_cache()
        clip = pipeline.generate(prompt=window.prompt, guide=guide, steps=30)
        clips.append(clip.cpu())
        offloader.unload_all()
        gc.collect()
        torch.cuda.empty_cache()
    return torch.cat(clips)
