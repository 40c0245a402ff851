def mean(xs):
    "Arithmetic mean."
    return sum(xs) / len(xs)


def median(xs):
    "Middle value of the sorted data."
    s = sorted(xs)
    return s[len(s) // 2]


def variance(xs):
    "Variance of the data."
    m = mean(xs)
    return sum((x - m) ** 2 for x in xs) / len(xs)


def mode(xs):
    "Most common value (the smallest one on ties)."
    counts = {}
    for x in xs:
        counts[x] = counts.get(x, 0) + 1
    best = max(counts.values())
    return min(x for x, c in counts.items() if c == best)
