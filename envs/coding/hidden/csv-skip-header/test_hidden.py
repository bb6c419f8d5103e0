from reports.csvsum import column_total


def test_simple():
    assert column_total("name,amount\na,1\nb,2\n", "amount") == 3.0


def test_other_column():
    assert column_total("x,y\n1,10\n2,20\n3,30", "x") == 6.0


def test_blank_lines():
    assert column_total("k,v\n\na,1.5\n\nb,2.5\n", "v") == 4.0


def test_single_row():
    assert column_total("price\n9.5", "price") == 9.5
