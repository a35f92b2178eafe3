"""One rank of test_torch.py's exit job: groups made and destroyed around zcoll.torch.empty
tensors (one group's tensor used on another), async all_reduces whose Work was dropped at
once -- some on a group destroyed with them queued -- and a subgroup nobody destroys, then
the interpreter exits, still holding the default group. A group's worker must not be left to drop the last reference to a
tensor while the interpreter finalizes: that needs the GIL, and the thread would be ended
through a noexcept destructor ("terminate called", exit status 134; 1 run in 2 before
zcoll/torch.py stopped the workers at exit)."""
import torch
import torch.distributed as dist
import zcoll.torch as zt

dist.init_process_group("zcoll")
me, p = dist.get_rank(), dist.get_world_size()
world = dist.distributed_c10d._get_default_group()  # held: it outlives destroy_process_group
for dt in (torch.bool, torch.complex128, torch.float64, torch.int16):
    for size in ((), (0,), (3,), (1, 7), (5, 0, 3)):
        assert zt.empty(*size, dtype=dt).shape == torch.Size(size)
a = dist.new_group(backend="zcoll")
ta = zt.empty(1 << 19, group=a)
dist.destroy_process_group(a)
b = dist.new_group(backend="zcoll")  # never destroyed
tb = zt.empty(1 << 19, group=b)
ta.fill_(1)
dist.all_reduce(ta, group=b)  # a's memory, ordinary memory now: the usual path
assert ta[0].item() == p and zt.stats(b)["mapped_collectives"] == 0
del ta
tb.fill_(1)
dist.all_reduce(tb, group=b)
assert tb[0].item() == p and zt.stats(b)["mapped_collectives"] == 1
for _ in range(20):
    w = dist.all_reduce(zt.empty(1 << 18), async_op=True)
    del w
dist.barrier()
c = dist.new_group(backend="zcoll")
w = dist.all_reduce(zt.empty(1 << 18, group=c), group=c, async_op=True)
del w
dist.destroy_process_group(c)
dist.barrier()
dist.destroy_process_group()
print(f"rank {me}: exit check done", flush=True)
