def calc_total(items):
    """Sum of price * qty."""
    return sum(i['price'] * i['qty'] for i in items)
