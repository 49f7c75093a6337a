"""fmcluster example: FSDP2 training of a small transformer on synthetic tokens, one process per GPU.

Started by fsdp-train.sbatch (srun, one task per GPU): rank, world size and local rank come from Slurm's task
variables, the rendezvous from MASTER_ADDR/MASTER_PORT (torch.distributed env://). fully_shard is PyTorch's
FSDP2 API (torch.distributed.fsdp, public since PyTorch 2.6). Rank 0 prints one line per 10 steps and a summary.
"""

import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

STEPS = int(os.environ.get("FSDP_STEPS", "50"))
VOCAB, DIM, LAYERS, HEADS, SEQ, BATCH = 32000, 2048, 8, 16, 1024, 4


def main() -> None:
    rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
    local_rank = int(os.environ["SLURM_LOCALID"])
    os.environ.setdefault("RANK", str(rank))
    os.environ.setdefault("WORLD_SIZE", str(world))
    os.environ.setdefault("LOCAL_RANK", str(local_rank))
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))

    layer = nn.TransformerEncoderLayer(DIM, HEADS, 4 * DIM, batch_first=True, norm_first=True)
    model = nn.Sequential(nn.Embedding(VOCAB, DIM), nn.TransformerEncoder(layer, LAYERS), nn.Linear(DIM, VOCAB)).cuda()
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model[1].layers:
        fully_shard(block, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    optim = torch.optim.AdamW(model.parameters(), lr=3e-4)
    # fully_shard turns each parameter into a DTensor sharded on dim 0, whose numel() is that of the whole (logical)
    # tensor, not of this rank's shard (https://docs.pytorch.org/docs/stable/distributed.tensor.html)
    params = sum(p.numel() for p in model.parameters())
    if rank == 0:
        print(f"fmcluster-fsdp: torch {torch.__version__}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, "
              f"world size {world}, ~{params / 1e6:.0f}M parameters", flush=True)

    gen = torch.Generator(device="cuda").manual_seed(rank)
    start = time.perf_counter()
    for step in range(1, STEPS + 1):
        tokens = torch.randint(0, VOCAB, (BATCH, SEQ + 1), device="cuda", generator=gen)
        logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB).float(), tokens[:, 1:].reshape(-1))
        loss.backward()
        optim.step()
        optim.zero_grad(set_to_none=True)
        if rank == 0 and step % 10 == 0:
            torch.cuda.synchronize()
            rate = step * BATCH * SEQ * world / (time.perf_counter() - start)
            print(f"fmcluster-fsdp: step {step}/{STEPS} loss {loss.item():.3f} tokens/s {rate:,.0f}", flush=True)
    dist.barrier()
    if rank == 0:
        print(f"fmcluster-fsdp: done: {STEPS} steps on {world} GPUs", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
