def generate(model, token, hidden, length):
    tokens = []
    for _ in range(length):
        logits, hidden = model(token, hidden)
        token = logits.argmax(-1)
        tokens.append(token)
    return tokens
