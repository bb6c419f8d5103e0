from reports.csvsum import column_total


def test_total():
    assert column_total("name,amount\na,1\nb,2\n", "amount") == 3.0
