import re


def snake_case(name):
    "Convert CamelCase or mixedCase to snake_case."
    s = re.sub(r'([a-z])([A-Z])', r'\1_\2', name)
    return s.replace('-', '_').replace(' ', '_').lower()


def camel_case(name):
    "Convert snake_case to CamelCase."
    parts = [p for p in re.split(r'[_\s-]+', name) if p]
    return ''.join(p[:1].upper() + p[1:] for p in parts if p.isalpha())
