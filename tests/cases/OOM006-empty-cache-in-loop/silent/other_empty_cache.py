# A project's own cache object, not the allocator's.
class Cache:
    def empty_cache(self):
        self.items = {}


def train(model, loader, cache):
    for batch in loader:
        model(batch).sum().backward()
        cache.empty_cache()
