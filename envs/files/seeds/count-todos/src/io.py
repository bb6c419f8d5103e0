def load(path):
    # TODO: handle missing files
    return open(path).read()


def save(path, data):
    # TODO: write atomically
    open(path, 'w').write(data)
