"""4 ranks as 2 replicas x 2 shards of a two-layer network, on a kolo rank mesh.

    kolorun -np 4 python3 examples/pytorch/mesh_2x2.py

The mesh (2, 2) with axes ("batch", "model") gives each rank two process sets: its replica's ranks
(along "model": they hold one copy of the network between them) and the ranks holding the same shard
in the other replica (along "batch": its data-parallel group). Each shard owns half of each layer's
output features; the activations cross the "model" set with allgather (the hidden features' partial
gradients summed back with reducescatter), and
DistributedOptimizer averages the gradients over the "batch" set only. Every rank also trains the
whole network in one process on the whole batch, and the example checks that the shards end up
equal to the matching slices of it (and exits 1 if not).
"""
import sys

import torch

import kolo.torch as kolo

D_IN, HIDDEN, D_OUT, ROWS, STEPS, LR = 8, 16, 4, 64, 25, 0.05


def data():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(ROWS, D_IN, generator=g, dtype=torch.float64)
    y = torch.sin(x @ torch.randn(D_IN, D_OUT, generator=g, dtype=torch.float64))
    return x, y


def whole_network():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(D_IN, HIDDEN), torch.nn.ReLU(),
                               torch.nn.Linear(HIDDEN, D_OUT)).double()


class ShardedNetwork(torch.nn.Module):
    """Shard `index` of `count` of whole_network(): each layer's rows (output features) index/count."""

    def __init__(self, index, count, model_set):
        super().__init__()
        full = whole_network()
        h, o = HIDDEN // count, D_OUT // count
        self.first = torch.nn.Linear(D_IN, h).double()
        self.second = torch.nn.Linear(HIDDEN, o).double()
        with torch.no_grad():
            self.first.weight.copy_(full[0].weight[index * h:(index + 1) * h])
            self.first.bias.copy_(full[0].bias[index * h:(index + 1) * h])
            self.second.weight.copy_(full[2].weight[index * o:(index + 1) * o])
            self.second.bias.copy_(full[2].bias[index * o:(index + 1) * o])
        self.model_set = model_set

    def forward(self, x):
        # allgather concatenates rows in the set's rank order: features travel as rows (transposed).
        hidden = SumGradients.apply(torch.relu(self.first(x)).t().contiguous(), self.model_set).t()
        # Every shard computes the same loss from the output, so the output's gradient is the same on
        # each: allgather's gradient, the average over the set (Horovod's), is it.
        return kolo.allgather(self.second(hidden).t().contiguous(), name="output", process_set=self.model_set).t()


class SumGradients(torch.autograd.Function):
    """All of the hidden features, gathered from the shards. Each shard's second layer sees only its
    own rows of weights, so each shard's gradient for the features is partial: summed over the set
    (a reducescatter), they are the whole gradient of each shard's features."""

    @staticmethod
    def forward(ctx, part, model_set):
        ctx.model_set = model_set
        return kolo.allgather(part, name="hidden", process_set=model_set).detach()

    @staticmethod
    def backward(ctx, grad):
        return kolo.reducescatter(grad.contiguous(), name="hidden.grad", op=kolo.Sum, process_set=ctx.model_set), None


def main():
    kolo.init()
    if kolo.size() != 4:
        sys.exit("mesh_2x2.py runs on 4 ranks (kolorun -np 4)")
    mesh = kolo.mesh(shape=(2, 2), axis_names=("batch", "model"))
    batch_set, model_set = mesh.process_set("batch"), mesh.process_set("model")
    shard, shards = model_set.rank(), model_set.size()
    replica, replicas = mesh.coordinate("batch"), mesh.size("batch")
    # Each batch set holds one shard index: the ranks it averages hold the same parameters.
    assert kolo.allgather(torch.tensor([shard]), process_set=batch_set).tolist() == [shard] * replicas

    x, y = data()
    per = ROWS // replicas
    mine = slice(replica * per, (replica + 1) * per)
    net = ShardedNetwork(shard, shards, model_set)
    optimizer = kolo.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=LR),
                                          named_parameters=net.named_parameters(), process_set=batch_set)
    reference = whole_network()
    ref_optimizer = torch.optim.SGD(reference.parameters(), lr=LR)
    for step in range(STEPS):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(net(x[mine]), y[mine])
        loss.backward()
        optimizer.step()
        ref_optimizer.zero_grad()
        ref_loss = torch.nn.functional.mse_loss(reference(x), y)
        ref_loss.backward()
        ref_optimizer.step()
        mean_loss = kolo.allreduce(loss.detach(), name="loss", process_set=batch_set).item()
        if kolo.rank() == 0 and (step % 5 == 0 or step == STEPS - 1):
            print("step %2d  loss %.6f  (one process on the whole batch: %.6f)" % (step, mean_loss, ref_loss.item()))

    h, o = HIDDEN // shards, D_OUT // shards
    expected = [reference[0].weight[shard * h:(shard + 1) * h], reference[0].bias[shard * h:(shard + 1) * h],
                reference[2].weight[shard * o:(shard + 1) * o], reference[2].bias[shard * o:(shard + 1) * o]]
    got = [net.first.weight, net.first.bias, net.second.weight, net.second.bias]
    diff = max((g - e).abs().max().item() for g, e in zip(got, expected))
    worst = kolo.allreduce(torch.tensor([diff]), op=kolo.Max, name="diff").item()
    if kolo.rank() == 0:
        print("mesh %s: largest difference from one process after %d steps: %.2e" % (mesh.ranks.tolist(), STEPS, worst))
    mesh.remove()
    kolo.shutdown()
    sys.exit(0 if worst < 1e-9 else 1)


if __name__ == "__main__":
    main()
