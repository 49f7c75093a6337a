"""fmcluster example: FSDP2 training of a small transformer on synthetic tokens, one process per GPU.

Started by fsdp-train.sbatch (srun, one task per GPU): rank, world size and local rank come from Slurm's task
variables, the rendezvous from MASTER_ADDR/MASTER_PORT (torch.distributed env://). fully_shard is PyTorch's
FSDP2 API (torch.distributed.fsdp, public since PyTorch 2.6). Rank 0 prints one line per 10 steps and a summary.

Checkpoint on a signal, resume when requeued (docs/capacity.md "The capacity window"): SIGUSR1 on any rank (the head
node's scancel --signal=USR1 --full before a Capacity Block ends) sets a flag; after each step the ranks agree on it
with one all_reduce (MAX), so all of them stop after the same step, save the sharded model and optimizer with
torch.distributed.checkpoint (DCP; get_state_dict / set_state_dict handle FSDP2's DTensors:
https://docs.pytorch.org/tutorials/recipes/distributed_checkpoint_recipe.html) under $FMC_CHECKPOINT_DIR/step-<n>,
and rank 0 records <n> in $FMC_CHECKPOINT_DIR/latest last, so a half-written checkpoint is never resumed from. At
start, a job that finds "latest" loads that checkpoint and goes on from step n + 1.
"""

import os
import signal
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

STEPS = int(os.environ.get("FSDP_STEPS", "50"))
VOCAB, DIM, LAYERS, HEADS, SEQ, BATCH = 32000, 2048, 8, 16, 1024, 4
CHECKPOINT_DIR = os.environ.get("FMC_CHECKPOINT_DIR", "checkpoints")
STOP = {"requested": False}


def request_stop(signum, frame) -> None:
    STOP["requested"] = True


def latest_step() -> int:
    """The step of the last complete checkpoint, 0 when there is none."""
    try:
        with open(os.path.join(CHECKPOINT_DIR, "latest")) as f:
            return int(f.read().strip())
    except (FileNotFoundError, ValueError):
        return 0


def save(model, optim, step: int, rank: int) -> None:
    model_sd, optim_sd = get_state_dict(model, optim)
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=os.path.join(CHECKPOINT_DIR, f"step-{step}"))
    dist.barrier()
    if rank == 0:
        tmp = os.path.join(CHECKPOINT_DIR, "latest.tmp")
        with open(tmp, "w") as f:
            f.write(f"{step}\n")
        os.replace(tmp, os.path.join(CHECKPOINT_DIR, "latest"))
        print(f"fmcluster-fsdp: checkpoint of step {step} in {CHECKPOINT_DIR}", flush=True)


def load(model, optim, step: int) -> None:
    model_sd, optim_sd = get_state_dict(model, optim)
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id=os.path.join(CHECKPOINT_DIR, f"step-{step}"))
    set_state_dict(model, optim, model_state_dict=state["model"], optim_state_dict=state["optim"])


def main() -> None:
    signal.signal(signal.SIGUSR1, request_stop)
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

    first = latest_step() + 1
    if first > 1:
        load(model, optim, first - 1)
        if rank == 0:
            print(f"fmcluster-fsdp: resumed from the checkpoint of step {first - 1}", flush=True)
    gen = torch.Generator(device="cuda").manual_seed(rank + first)
    start = time.perf_counter()
    for step in range(first, STEPS + 1):
        tokens = torch.randint(0, VOCAB, (BATCH, SEQ + 1), device="cuda", generator=gen)
        logits = model(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB).float(), tokens[:, 1:].reshape(-1))
        loss.backward()
        optim.step()
        optim.zero_grad(set_to_none=True)
        if rank == 0 and step % 10 == 0:
            torch.cuda.synchronize()
            rate = (step - first + 1) * BATCH * SEQ * world / (time.perf_counter() - start)
            print(f"fmcluster-fsdp: step {step}/{STEPS} loss {loss.item():.3f} tokens/s {rate:,.0f}", flush=True)
        stop = torch.tensor([1 if STOP["requested"] else 0], device="cuda")
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item() and step < STEPS:
            save(model, optim, step, rank)
            if rank == 0:
                print(f"fmcluster-fsdp: stopped after step {step} on request (requeue resumes)", flush=True)
            dist.destroy_process_group()
            return
    dist.barrier()
    if rank == 0:
        print(f"fmcluster-fsdp: done: {STEPS} steps on {world} GPUs", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
