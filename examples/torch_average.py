"""Local SGD from PyTorch on zcoll: every rank trains on its own data and the model is
averaged every few mini-batches. The parameters are views of one vector in memory this
host's ranks can map (zcoll.torch.empty), so zcoll's all_reduce reads every rank's vector
where it lies instead of copying it through shared memory.

    torchrun --standalone --nproc_per_node=2 --redirects 9:1 --tee 9:1 examples/torch_average.py
"""
import torch
import torch.distributed as dist
import zcoll.torch

dist.init_process_group("zcoll")
me = dist.get_rank()
model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.Tanh(), torch.nn.Linear(512, 1))
# One flat vector holds every parameter (1 MiB of float32); each parameter becomes a view
# of it, so the optimizer's updates land in it.
params = list(model.parameters())
flat = zcoll.torch.empty(sum(p.numel() for p in params))
off = 0
for p in params:
    flat[off:off + p.numel()].copy_(p.data.view(-1))
    p.data = flat[off:off + p.numel()].view_as(p)
    off += p.numel()
dist.broadcast(flat, 0)  # everybody starts from rank 0's model

torch.manual_seed(0)
teacher = torch.randn(512, 1) / 512 ** 0.5  # the function every rank's data comes from
torch.manual_seed(1 + me)  # each rank its own data
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(1, 41):
    x = torch.randn(32, 512)
    loss = torch.nn.functional.mse_loss(model(x), x @ teacher)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 4 == 0:  # average the model every 4 mini-batches
        dist.all_reduce(flat, op=dist.ReduceOp.AVG)
lo, hi = flat.clone(), flat.clone()
dist.all_reduce(lo, op=dist.ReduceOp.MIN)
dist.all_reduce(hi, op=dist.ReduceOp.MAX)
print(f"rank {me}: loss {loss.item():.4f}, the same model everywhere: {torch.equal(lo, hi)}, "
      f"averages read in place: {zcoll.torch.stats()['mapped_collectives']} of 10")
dist.destroy_process_group()
