"""kolo._policy's rules, without a framework or MPI: scaling, naming, grouping, compression, objects."""
import numpy as np
import pytest

from kolo import _process_sets
from kolo._abi import COMPRESSION_FP16, COMPRESSION_NONE
from kolo._errors import KoloError
from kolo._policy import compression, grouping, naming, objects, scaling


def test_predivide_splits_the_average_and_nothing_else():
    assert scaling.predivide(scaling.Average, 4) == (0.25, 4.0)
    assert scaling.predivide(scaling.Average, 1.0) == (1.0, 1.0)
    assert scaling.predivide(scaling.Sum, 4) == (1.0, 1.0)
    scaling.check_predivide(scaling.Sum, 1.0)
    with pytest.raises(ValueError, match="^gradient_predivide_factor applies to op=Average only$"):
        scaling.check_predivide(scaling.Sum, 2.0)


def test_op_of_takes_horovods_average():
    assert scaling.op_of(None, None) == scaling.Average
    assert scaling.op_of(None, False) == scaling.Sum
    assert scaling.op_of(scaling.Max, None) == scaling.Max
    with pytest.raises(ValueError, match="pass op or average, not both"):
        scaling.op_of(scaling.Sum, True)
    with pytest.raises(KoloError, match="the gradient of a reducescatter with op Max is not defined"):
        scaling.check_differentiable(scaling.Max, "a reducescatter")


def test_unnamed_ops_count_per_kind_and_process_set():
    namer, in_set = naming.Namer("t"), _process_sets.ProcessSet([0])
    in_set.process_set_id = 7
    assert [namer.name(None, "allreduce"), namer.name(None, "allreduce"), namer.name(None, "broadcast"),
            namer.name(None, "allreduce", in_set), namer.name(None, "allreduce", _process_sets.global_process_set),
            namer.name("mine", "allreduce")] == \
        ["t.allreduce.0", "t.allreduce.1", "t.broadcast.0", "t.allreduce.0", "t.allreduce.2", "mine"]


def test_groups_as_horovod_splits_them():
    assert grouping.split_list(list(range(5)), 2) == [[0, 1, 2], [3, 4]]
    assert grouping.split_list([1], 3) == [[1]]
    a, b, c = object(), object(), object()
    entries = [(0, a), (1, b), (2, c)]
    key = lambda entry: id(entry[1])  # noqa: E731
    assert grouping.split_by(entries, None, key) == [[e] for e in entries]
    assert grouping.split_by(entries, 2, key) == [entries[:2], entries[2:]]
    assert grouping.split_by(entries, [[c, a]], key) == [[entries[0], entries[2]], [entries[1]]]


def test_compression_from_a_framework_cast():
    Compression = compression.compression(cast=lambda a, dtype: a.astype(dtype),
                                          floating_dtype=lambda a: a.dtype if a.dtype.kind == "f" else None,
                                          fp16=np.dtype(np.float16), bf16=None, module=__name__)
    sent, ctx = Compression.fp16.compress(np.ones(3, np.float32))
    assert sent.dtype == np.float16 and Compression.fp16.decompress(sent, ctx).dtype == np.float32
    assert Compression.fp16.compress(np.ones(3, np.int32))[1] is None
    assert Compression.none.compress("t") == ("t", None)
    assert compression.engine_compression(Compression.fp16, True) == COMPRESSION_FP16
    assert compression.engine_compression(Compression.fp16, False) is None
    assert compression.engine_compression(Compression.none, False) == COMPRESSION_NONE
    assert compression.engine_compression(compression.Compressor, True) is None


def test_objects_over_a_bindings_byte_collectives(monkeypatch):
    # One rank: a broadcast hands back root's bytes, an allgather this rank's.
    monkeypatch.setattr(objects._lifecycle, "rank", lambda: 0)
    calls = []
    both = objects.ObjectCollectives(lambda a, name, root, ps: calls.append(name) or a.copy(),
                                     lambda a, name, ps: calls.append(name) or a.copy())
    assert both.broadcast_object({"a": 1}) == {"a": 1}
    assert both.allgather_object([1, 2], name="x") == [[1, 2]]
    assert calls == ["broadcast_object.dict.size", "broadcast_object.dict.data", "allgather_object.x.sizes",
                     "allgather_object.x.data"]
