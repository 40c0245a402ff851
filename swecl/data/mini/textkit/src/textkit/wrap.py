def truncate(text, width, ellipsis='...'):
    "Shorten text to at most width characters, ending with ellipsis when cut."
    if len(text) < width:
        return text
    return text[:width - len(ellipsis)] + ellipsis


def wrap_words(text, width):
    "Greedy word wrap into lines of at most width characters."
    lines, line = [], ''
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f'{line} {word}' if line else word
    if line:
        lines.append(line)
    return lines
