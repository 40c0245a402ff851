from textkit import truncate, wrap_words


def test_truncate_long():
    assert truncate('hello world', 8) == 'hello...'


def test_truncate_short():
    assert truncate('hi', 5) == 'hi'


def test_wrap_words():
    assert wrap_words('the quick brown fox', 10) == ['the quick', 'brown fox']
