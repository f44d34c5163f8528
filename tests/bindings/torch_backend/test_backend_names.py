"""The names the kolo backend gives torch's ops (their place in the group's sequence, recurring every SLOTS ops, or
every multiple of a loop's period that fits, so that a loop's ops are agreed from kolo's response cache): results
stay exact whatever is in flight, and a rank whose tensor differs from the others' at a place already cached fails
on every rank, as an unnamed op does."""
import pytest
import torch
import torch.distributed as dist

from kolo.torch import KoloError
import random

from kolo.torch.backend._names import CHECK_EVERY, FIRST_CHECK, FIRST_WINDOW, SLOTS, WINDOW, period


def test_more_ops_in_flight_than_there_are_names_give_exact_results(rank, size):
    # Taking a slot whose op is still in flight waits for that op; each result is still its own op's.
    tensors = [torch.full((3,), float(i + 1)) for i in range(SLOTS + 37)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    for i, work in reversed(list(enumerate(works))):
        work.wait()
        assert tensors[i].tolist() == [float((i + 1) * size)] * 3


def test_a_loop_of_the_same_ops_reduces_each_steps_values(rank, size):
    # After the first SLOTS ops each place is cached; the values reduced are each step's, not the cached run's.
    for step in range(2 * SLOTS + 5):
        t = torch.full((2,), float(step + rank))
        dist.all_reduce(t)
        assert t.tolist() == [float(step * size + size * (size - 1) // 2)] * 2


def test_two_groups_of_the_same_ranks_keep_their_own_sequences(rank, size):
    other = dist.new_group(backend="kolo")
    works = []
    for i in range(SLOTS + 3):
        a, b = torch.full((1,), float(i)), torch.full((2,), float(rank))
        works.append((a, dist.all_reduce(a, async_op=True), b, dist.all_reduce(b, group=other, async_op=True), i))
    for a, wa, b, wb, i in works:
        wa.wait()
        wb.wait()
        assert a.tolist() == [float(i * size)] and b.tolist() == [float(size * (size - 1) // 2)] * 2
    dist.destroy_process_group(other)


def others(size):
    """Every rank but 1, as kolo's mismatch error lists them."""
    ranks = [r for r in range(size) if r != 1]
    return "rank %d" % ranks[0] if len(ranks) == 1 else "ranks " + ",".join(map(str, ranks))


def test_a_size_that_changes_on_one_rank_at_a_cached_place_fails_on_every_rank(rank, size):
    if size < 2:
        pytest.skip("needs 2 ranks")
    for _ in range(SLOTS):  # every place cached with 4 float32s
        dist.all_reduce(torch.ones(4))
    with pytest.raises(KoloError, match=r"Mismatched shape for tensor 'torch group 0 slot \d+' \(allreduce\): \[4\] on "
                                        r"%s, \[5\] on rank 1\." % others(size)):
        dist.all_reduce(torch.ones(4 + (rank == 1)))
    t = torch.ones(4)
    dist.all_reduce(t)
    assert t.tolist() == [float(size)] * 4


def test_a_dtype_that_changes_on_one_rank_at_a_cached_place_fails_on_every_rank(rank, size):
    if size < 2:
        pytest.skip("needs 2 ranks")
    for _ in range(SLOTS):
        dist.all_reduce(torch.ones(4))
    with pytest.raises(KoloError, match=r"Mismatched dtype for tensor 'torch group 0 slot \d+' \(allreduce\): float32 on "
                                        r"%s, float64 on rank 1\." % others(size)):
        dist.all_reduce(torch.ones(4, dtype=torch.float64 if rank == 1 else torch.float32))
    t = torch.ones(4)
    dist.all_reduce(t)
    assert t.tolist() == [float(size)] * 4


def test_a_period_is_the_shortest_that_repeats_at_least_twice():
    assert period(["a", "b", "c"] * 5, 64) == 3
    assert period(["a"] * 10, 64) == 1
    assert period(["a", "b", "a", "b", "a"], 64) == 2
    assert period(["a", "b", "c"], 64) == 0
    assert period([], 64) == period(["a"], 64) == 0
    assert period(list(range(192)), 64) == 0
    assert period(list(range(65)) * 3, 64) == 0  # longer than looked for
    assert period(list(range(65)) * 3, 65) == 65
    assert period(["x"] + ["a", "b"] * 5, 64) == 0  # a first op that is not the loop's: none


def _shortest_by_trying_each(signatures, longest):
    n = len(signatures)
    for p in range(1, min(longest, n // 2) + 1):
        if all(signatures[i] == signatures[i - p] for i in range(p, n)):
            return p
    return 0


def test_a_period_found_in_one_pass_is_the_one_trying_each_finds():
    draw = random.Random(54)
    for _ in range(2000):
        n, letters = draw.randrange(0, 40), draw.randrange(1, 4)
        if draw.random() < 0.5:  # a loop, cut anywhere, with a chance of one op changed
            loop = [draw.randrange(letters) for _ in range(draw.randrange(1, 8))]
            seq = (loop * n)[:n]
            if seq and draw.random() < 0.3:
                seq[draw.randrange(len(seq))] = letters
        else:
            seq = [draw.randrange(letters) for _ in range(n)]
        longest = draw.randrange(1, 20)
        assert period(seq, longest) == _shortest_by_trying_each(seq, longest), (seq, longest)


def test_a_loop_whose_period_does_not_divide_the_slots_is_named_by_its_period(rank, size):
    # 9 ops a step (9 DDP buckets, say): at the first check every rank finds 9, and the names recur every 414 ops
    # from then on; each step's values are still its own.
    group = dist.new_group(backend="kolo")
    names = group.names  # torch hands back kolo's group itself (2.4 to 2.15)
    shapes = [(i + 1,) for i in range(9)]
    steps = FIRST_CHECK // 9 + 2 * SLOTS // 9
    for step in range(steps):
        tensors = [torch.full(shape, float(step + rank)) for shape in shapes]
        works = [dist.all_reduce(t, group=group, async_op=i % 2 == 1) for i, t in enumerate(tensors)]
        for w in works:
            if w is not None:
                w.wait()
        for t in tensors:
            assert t.tolist() == [float(step * size + size * (size - 1) // 2)] * t.numel()
    assert names._slots == 9 * (SLOTS // 9)
    dist.destroy_process_group(group)


def test_ops_without_a_period_keep_the_slots(rank, size):
    group = dist.new_group(backend="kolo")
    names = group.names  # torch hands back kolo's group itself (2.4 to 2.15)
    for i in range(FIRST_CHECK + 1):
        t = torch.full((i % 97 + 1,), 1.0)  # a period of 97: longer than the first check looks for
        dist.all_reduce(t, group=group)
        assert t.tolist() == [float(size)] * t.numel()
    assert names._slots == SLOTS and names._check_at == FIRST_CHECK + CHECK_EVERY
    dist.destroy_process_group(group)


def test_a_long_period_is_found_at_the_later_checks(rank, size):
    # 97 ops a step (FSDP's gathers and reductions over 32 blocks, say): more than the first check looks for
    # (FIRST_WINDOW // 3), found at the second; the names recur every 388 ops from then on, each op's values its own.
    assert 97 > FIRST_WINDOW // 3
    group = dist.new_group(backend="kolo")
    names = group.names
    second = FIRST_CHECK + CHECK_EVERY
    for i in range(second + 2 * SLOTS):
        t = torch.full((i % 97 + 1,), float(i + rank))
        dist.all_reduce(t, group=group)
        assert t.tolist() == [float(i * size + size * (size - 1) // 2)] * t.numel()
        if i + 1 == FIRST_CHECK:
            assert names._slots == SLOTS
    assert names._slots == 97 * (SLOTS // 97)
    dist.destroy_process_group(group)


def _reduce_checked(group, shape, value, rank, size):
    t = torch.full(shape, float(value + rank))
    dist.all_reduce(t, group=group)
    assert t.tolist() == [float(value * size + size * (size - 1) // 2)] * t.numel()


def test_a_period_in_force_outlives_a_check_whose_window_a_few_other_ops_break(rank, size):
    # 9 ops a step, found at the first check (414 names); two other ops (an evaluation's metrics) within the second
    # check's window: that check finds no period, keeps the 414 names, and checks again one window later, which
    # finds 9 again. Each op's values its own.
    group = dist.new_group(backend="kolo")
    names = group.names
    second = FIRST_CHECK + CHECK_EVERY
    ops = 0
    while ops < second + WINDOW + 9:
        if ops == second - WINDOW // 2:
            for j in range(2):
                _reduce_checked(group, (50 + j,), ops, rank, size)
                ops += 1
        for i in range(9):
            _reduce_checked(group, (i + 1,), ops, rank, size)
            ops += 1
            if ops == FIRST_CHECK + 1:
                assert names._slots == 9 * (SLOTS // 9)
            if ops == second:
                assert names._slots == 9 * (SLOTS // 9) and names._check_at == second + WINDOW
    assert names._slots == 9 * (SLOTS // 9) and names._check_at == second + WINDOW + CHECK_EVERY
    dist.destroy_process_group(group)


def test_a_period_ends_at_the_second_check_in_a_row_without_it(rank, size):
    # 9 ops a step, then ops of no period (the same drawn shapes on every rank): the second check keeps the 414
    # names, the one a window later returns to SLOTS.
    group = dist.new_group(backend="kolo")
    names = group.names
    second = FIRST_CHECK + CHECK_EVERY
    draw = random.Random(7)
    for ops in range(second + WINDOW):
        shape = (ops % 9 + 1,) if ops < FIRST_CHECK + 9 * 20 else (draw.randrange(1, 200),)
        _reduce_checked(group, shape, ops, rank, size)
        if ops + 1 == second:
            assert names._slots == 9 * (SLOTS // 9) and names._check_at == second + WINDOW
    assert names._slots == SLOTS and names._check_at == second + WINDOW + CHECK_EVERY
    dist.destroy_process_group(group)


def test_a_period_of_coalesced_ops_recurs_by_the_names_it_takes(rank, size):
    # Each step two coalesced all_reduces of 4 tensors: a period of 2 ops that takes 8 names, which do not divide
    # SLOTS; the names recur every 416 from the first check.
    group = dist.new_group(backend="kolo")
    names = group.names
    for step in range(FIRST_CHECK // 2 + SLOTS // 4):
        for j in range(2):
            tensors = [torch.full((j + 1, k + 1), float(step + rank)) for k in range(4)]
            dist.all_reduce_coalesced(tensors, group=group)
            for t in tensors:
                assert t.flatten().tolist() == [float(step * size + size * (size - 1) // 2)] * t.numel()
    assert names._slots == 8 * (SLOTS // 8)
    dist.destroy_process_group(group)
