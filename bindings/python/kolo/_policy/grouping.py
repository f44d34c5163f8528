"""Horovod's gradient groups (`groups`, or its older `num_groups`): an int splits the gradients into that
many consecutive groups of near-equal size; a list of lists makes a group of each list."""


def split_list(items, count):
    """Horovod's split of `items` into `count` consecutive groups of near-equal size (the first
    len % count one longer), as its optimizers' num_groups does; fewer groups when fewer items."""
    count = min(count, len(items))
    if count <= 0:
        return []
    size, extra = divmod(len(items), count)
    return [items[k * size + min(k, extra):(k + 1) * size + min(k + 1, extra)] for k in range(count)]


def split_by(entries, groups, key):
    """`entries` as Horovod groups them: each alone (groups None or 0); `groups` consecutive groups (an
    int); or one group per list of `groups` (its members found by key(entry), in the entries' order),
    the entries of no list alone after them."""
    if not groups:
        return [[entry] for entry in entries]
    if isinstance(groups, int):
        return split_list(entries, groups)
    order = {key(entry): i for i, entry in enumerate(entries)}
    by_key = {key(entry): entry for entry in entries}
    out = []
    for members in groups:
        group = [by_key.pop(id(m)) for m in members if id(m) in by_key]
        if group:
            out.append(sorted(group, key=lambda entry: order[key(entry)]))
    return out + [[entry] for entry in sorted(by_key.values(), key=lambda entry: order[key(entry)])]
