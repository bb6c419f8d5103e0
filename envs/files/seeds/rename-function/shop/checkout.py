from shop.cart import calc_total


def checkout(items, tax=0.2):
    net = calc_total(items)
    return net + net * tax
