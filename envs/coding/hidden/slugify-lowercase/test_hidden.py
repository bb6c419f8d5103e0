from slugs.text import slugify


def test_two_words():
    assert slugify("Hello World") == "hello-world"


def test_spaces():
    assert slugify("  Many   Spaces Here ") == "many-spaces-here"


def test_mixed_case():
    assert slugify("MiXeD") == "mixed"


def test_hyphen_kept():
    assert slugify("Already-Lower Case") == "already-lower-case"
