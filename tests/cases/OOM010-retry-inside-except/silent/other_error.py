def load_or_build(model, path):
    try:
        return model.load(path)
    except FileNotFoundError:
        return model(None)
