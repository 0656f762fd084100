# A generation server: each request is handled once, between idle periods.
import torch

app = None


def handle_generate(request, model, tokenizer):
    inputs = tokenizer(request["prompt"], return_tensors="pt").to("cuda")
    output = model.generate(**inputs, max_new_tokens=request.get("max_tokens", 64))
    torch.cuda.empty_cache()
    return tokenizer.decode(output[0])


def chat(model, tokenizer):
    while True:
        prompt = input("> ")
        output = model.generate(**tokenizer(prompt, return_tensors="pt"))
        print(tokenizer.decode(output[0]))
        torch.cuda.empty_cache()
