class Cache:
    def __init__(self):
        self.items = {}  # TODO: bound the size

    def get(self, key):
        return self.items.get(key)
