"""kolo.jax.elastic at N ranks (outside an elastic launch): JaxState's commit, restore, sync (arrays
fused in one broadcast, the rest as objects) and bytes; run syncs and runs once. The in-place end to
end is tests/system/elastic_in_place (jax_in_place.py)."""
import io

import jax
import jax.numpy as jnp
import numpy as np

import kolo.jax as kolo


def trees(seed):
    params = {"w": jnp.full((3, 2), float(seed)), "b": jnp.arange(2, dtype=jnp.int32) + seed}
    opt_state = (jnp.float32(seed), [jnp.zeros(4) + seed])
    return params, opt_state


def same(tree, other):
    return all(np.array_equal(a, b) and a.dtype == b.dtype
               for a, b in zip(jax.tree_util.tree_leaves(tree), jax.tree_util.tree_leaves(other)))


def test_commit_restore_and_sync_from_rank_0(rank, size):
    params, opt_state = trees(rank)
    state = kolo.elastic.JaxState(params=params, opt_state=opt_state, epoch=rank, names=["a", rank])
    state.commit()
    state.params = jax.tree_util.tree_map(lambda a: a + 7, state.params)
    state.epoch, state.names = 99, []
    state.restore()
    assert same(state.params, params) and state.epoch == rank and state.names == ["a", rank]
    state.sync()
    root_params, root_opt_state = trees(0)
    assert same(state.params, root_params) and same(state.opt_state, root_opt_state)
    assert state.epoch == 0 and state.names == ["a", 0]
    state.params = jax.tree_util.tree_map(lambda a: a * 0, state.params)
    state.restore()  # the synced values: sync saves
    assert same(state.params, root_params)


def test_state_travels_as_bytes(rank):
    params, opt_state = trees(rank)
    state = kolo.elastic.JaxState(params=params, opt_state=opt_state, step=5)
    state.commit()
    payload = io.BytesIO()
    state.serialize(payload)
    other = kolo.elastic.JaxState(params=trees(rank + 9)[0], opt_state=trees(rank + 9)[1], step=0)
    other.deserialize(payload.getvalue())
    assert same(other.params, params) and same(other.opt_state, opt_state) and other.step == 5
    assert isinstance(other.params["w"], jax.Array)


def test_run_outside_an_elastic_launch_syncs_and_runs_once(rank):
    state = kolo.elastic.JaxState(params=trees(rank)[0], epoch=rank)
    calls = []

    @kolo.elastic.run
    def train(s, extra):
        calls.append(extra)
        return s.epoch, float(s.params["w"][0, 0])

    assert train(state, "x") == (0, 0.0) and calls == ["x"]
