"""DistributedDataParallel on the zcoll backend: a few steps of a linear model, every rank
on its own data, then a check that every rank holds the same model.

    PYTHONPATH=build/python torchrun --standalone --nproc_per_node=2 --redirects 9:1 \
        --tee 9:1 examples/torch_ddp.py

(--redirects 9:1 --tee 9:1: torch 1.13's torchrun crashes on Python 3.11 without them.)
"""
import torch
import torch.distributed as dist
import zcoll.torch  # noqa: F401 -- registers the backend "zcoll"
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("zcoll")               # rank and size from torchrun
torch.manual_seed(dist.get_rank())             # each rank its own data
model = DDP(torch.nn.Linear(32, 4))            # starts from rank 0's parameters
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(20):
    x, y = torch.randn(16, 32), torch.randn(16, 4)
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()   # gradients averaged by zcoll
    opt.step()
w = model.module.weight.detach()
lo, hi = w.clone(), w.clone()
dist.all_reduce(lo, op=dist.ReduceOp.MIN)
dist.all_reduce(hi, op=dist.ReduceOp.MAX)
print(f"rank {dist.get_rank()}: the same model everywhere: {torch.equal(lo, hi)}")
dist.destroy_process_group()
