# diffusers' log_validation: the pipeline's __call__ disables grad itself; it is not the network being trained.
import torch


def log_validation(pipeline, args, accelerator, epoch):
    pipeline = pipeline.to(accelerator.device)
    generator = torch.Generator(device=accelerator.device).manual_seed(args.seed)
    images = []
    for _ in range(args.num_validation_images):
        with torch.autocast("cuda"):
            image = pipeline(args.validation_prompt, num_inference_steps=30, generator=generator).images[0]
        images.append(image)
    return images
