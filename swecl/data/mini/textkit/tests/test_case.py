from textkit import snake_case, camel_case


def test_snake_basic():
    assert snake_case('helloWorld') == 'hello_world'


def test_snake_spaces():
    assert snake_case('Hello World') == 'hello_world'


def test_camel_basic():
    assert camel_case('hello_world') == 'HelloWorld'
