from .case import snake_case, camel_case
from .wrap import truncate, wrap_words

__all__ = ['snake_case', 'camel_case', 'truncate', 'wrap_words']
