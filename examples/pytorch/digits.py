"""A small convnet trained on scikit-learn's 8x8 digits, in one process.

Its data-parallel twin is digits_kolo.py: `diff digits.py digits_kolo.py` shows the lines kolo adds.
"""
import argparse

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=15)
parser.add_argument("--batch-size", type=int, default=64, help="the global batch, over all ranks")
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--no-cuda", action="store_true", help="train on the CPU where a GPU is usable too")
args = parser.parse_args()
device = torch.device("cuda" if torch.cuda.is_available() and not args.no_cuda else "cpu")

digits = load_digits()
x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
y = torch.tensor(digits.target, dtype=torch.int64)
x_train, x_test, y_train, y_test = (t.to(device) for t in train_test_split(x, y, test_size=0.2, random_state=0))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.fc1 = torch.nn.Linear(16 * 4 * 4, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


torch.manual_seed(0)
model = Net().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
shard = slice(0, args.batch_size)

for epoch in range(1, args.epochs + 1):
    order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(epoch)).to(device)
    model.train()
    for start in range(0, len(order) - args.batch_size + 1, args.batch_size):
        batch = order[start:start + args.batch_size][shard]
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x_train[batch]), y_train[batch])
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    print("epoch %2d  loss %.4f  test accuracy %.4f" % (epoch, loss.item(), accuracy))
