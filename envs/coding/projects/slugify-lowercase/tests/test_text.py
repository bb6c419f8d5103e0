from slugs.text import slugify


def test_slug():
    assert slugify("Hello World") == "hello-world"
