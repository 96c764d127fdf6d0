"""PyTorch DistributedDataParallel bootstrapped from Open MPI's environment: rank, world size and local
rank come from the OMPI_COMM_WORLD_* variables mpirun sets, the rendezvous address is rank 0's host name,
sent to every rank with mpi4py (only the launcher has /etc/mpi/hostfile), and the gloo backend runs on
CPU. Trains a small classifier on scikit-learn's digits; rank 0 prints the test accuracy."""

from __future__ import annotations

import os
import socket

import torch
import torch.distributed as dist
from mpi4py import MPI
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch.nn.parallel import DistributedDataParallel

rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
size = int(os.environ["OMPI_COMM_WORLD_SIZE"])
local_rank = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
os.environ.setdefault("MASTER_ADDR", MPI.COMM_WORLD.bcast(socket.gethostname(), root=0))
os.environ.setdefault("MASTER_PORT", "29500")
dist.init_process_group("gloo", rank=rank, world_size=size)

digits = load_digits()
x_train, x_test, y_train, y_test = train_test_split(digits.data / 16.0, digits.target, test_size=0.25,
                                                    random_state=0, stratify=digits.target)
xs = torch.tensor(x_train[rank::size], dtype=torch.float32)
ys = torch.tensor(y_train[rank::size])
torch.manual_seed(0)
model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
# Every rank takes the same number of steps (the smallest shard's), so DDP's allreduces match.
counts = torch.tensor([len(xs) // 32])
dist.all_reduce(counts, op=dist.ReduceOp.MIN)
for _epoch in range(int(os.environ.get("EPOCHS", "30"))):
    order = torch.randperm(len(xs))
    for step in range(int(counts.item())):
        idx = order[step * 32:(step + 1) * 32]
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(xs[idx]), ys[idx]).backward()
        opt.step()
if rank == 0:
    with torch.no_grad():
        pred = model(torch.tensor(x_test, dtype=torch.float32)).argmax(dim=1).numpy()
    print(f"torch ddp: test accuracy {(pred == y_test).mean():.4f} on {size} ranks "
          f"(local rank {local_rank}, master {os.environ['MASTER_ADDR']})", flush=True)
dist.destroy_process_group()
