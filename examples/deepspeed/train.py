"""A small causal transformer trained with DeepSpeed ZeRO, launched by `mpirun` as Kubeflow Trainer's
`deepspeed-distributed` runtime launches it: no torchrun, no `deepspeed` launcher. DeepSpeed finds its
rank, world size and rendezvous address itself: `deepspeed.init_distributed()`, given no RANK or
MASTER_ADDR, asks mpi4py for the rank and size and sends every rank rank 0's address (`hostname -I`).
Its accelerator is the CPU, with torch's gloo backend, when no GPU is there.

The model is built here (no download): a 2-layer transformer over a 16-token vocabulary, learning a fixed
rule (each token is 5 × the previous + 3, mod 16) from sequences generated per rank and step. Every
rank trains on its own batches; ZeRO partitions the optimizer state and gradients (stage 2) or the
parameters too (stage 3) across the ranks.

At the end, every rank writes its part of a DeepSpeed checkpoint to $CHECKPOINT_DIR (a claim all pods
mount). A job that finds a checkpoint there loads it first and prints the step it loaded and the held-out
loss of the weights it got, so a second job shows it goes on from exactly where the first stopped.

Settings (environment): STEPS (20: training steps of this job), ZERO_STAGE (3), CHECKPOINT_DIR (unset:
no checkpoint), REQUIRE_CHECKPOINT (unset; 1: fail unless a checkpoint is there to load), MICRO_BATCH (16,
sequences per rank and step), LR (0.001), SHM_COMM (0; 1: let DeepSpeed build and use its shared-memory
all-reduce op on CPU, which needs g++ and Python's headers where the ranks run)."""

from __future__ import annotations

import math
import os
import socket
import sys
import warnings

import deepspeed
import torch
from torch import nn

# DeepSpeed 0.19 still calls the collectives that torch 2.13 renamed: a warning per call, rank and step
warnings.filterwarnings("ignore", r"`torch\.distributed\.\w+` is deprecated", FutureWarning)


def setting(name: str, default: str, kind: type[int] | type[float], allowed: range | None = None) -> float:
    """An environment setting as a number; a bad one stops every rank with its name, value and what it takes."""
    text = os.environ.get(name, default)
    try:
        value: float | None = kind(text)
    except ValueError:
        value = None
    fits = value is not None and (value in allowed if allowed is not None else value > 0)
    if not fits:
        want = f"one of {', '.join(map(str, allowed))}" if allowed is not None else f"a positive {kind.__name__}"
        sys.exit(f"train.py: {name}={text!r} is not {want}: set it in the TrainJob's trainer.env")
    return value


VOCAB, SEQ, WIDTH, HEADS, LAYERS = 16, 24, 64, 4, 2
STEPS = int(setting("STEPS", "20", int))
ZERO_STAGE = int(setting("ZERO_STAGE", "3", int, range(4)))
MICRO_BATCH = int(setting("MICRO_BATCH", "16", int))
LR = setting("LR", "0.001", float)
CKPT_DIR = os.environ.get("CHECKPOINT_DIR", "")
REQUIRE_CHECKPOINT = os.environ.get("REQUIRE_CHECKPOINT", "") == "1"
SHM_COMM = os.environ.get("SHM_COMM", "0") == "1"


class TinyLM(nn.Module):
    """A causal transformer language model: embeddings, pre-norm encoder layers under a causal mask, a head."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.position = nn.Parameter(torch.zeros(SEQ, WIDTH))
        layer = nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, dropout=0.0, batch_first=True, norm_first=True)
        self.layers = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(WIDTH, VOCAB)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(SEQ), persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) + self.position[: tokens.shape[1]]
        return self.head(self.layers(x, mask=self.mask[: tokens.shape[1], : tokens.shape[1]], is_causal=True))


def batch(generator: torch.Generator, size: int) -> torch.Tensor:
    """`size` sequences of the rule x[t+1] = 5·x[t] + 3 (mod 16), each from a random first token."""
    first = torch.randint(0, VOCAB, (size, 1), generator=generator)
    seq = [first]
    for _ in range(SEQ - 1):
        seq.append((seq[-1] * 5 + 3) % VOCAB)
    return torch.cat(seq, dim=1)


def loss_of(engine: deepspeed.DeepSpeedEngine, tokens: torch.Tensor) -> torch.Tensor:
    """Next-token cross entropy over every position but the last."""
    logits = engine(tokens[:, :-1])
    return nn.functional.cross_entropy(logits.reshape(-1, VOCAB), tokens[:, 1:].reshape(-1))


def main() -> int:
    if not SHM_COMM:
        # DeepSpeed's CPU accelerator otherwise JIT-compiles its shared-memory all-reduce (a C++ op it uses
        # for inference only) in init_distributed: g++ and Python's headers at run time, about a minute
        # and a half on 2 cores, per home directory. Training's collectives are torch.distributed's.
        deepspeed.ops.__compatible_ops__["deepspeed_shm_comm"] = False
    deepspeed.init_distributed()  # MPI discovery: rank, size and MASTER_ADDR from mpirun and mpi4py
    rank, size = torch.distributed.get_rank(), torch.distributed.get_world_size()
    hosts: list[str | None] = [None] * size
    torch.distributed.all_gather_object(hosts, socket.gethostname())  # where each rank runs: one per node
    torch.manual_seed(0)  # the same initial weights on every rank
    config = {
        "train_micro_batch_size_per_gpu": MICRO_BATCH,
        "gradient_accumulation_steps": 1,
        # torch's AdamW: DeepSpeed's fused Adam is a CUDA (or compiled CPU) kernel
        "optimizer": {"type": "AdamW", "params": {"lr": LR, "torch_adam": True}},
        "zero_optimization": {"stage": ZERO_STAGE},
        "steps_per_print": 10**9,
    }
    model = TinyLM()
    parameters = sum(p.numel() for p in model.parameters())
    engine, _, _, _ = deepspeed.initialize(model=model, config=config)
    held_out = batch(torch.Generator().manual_seed(12345), 64)  # the same on every rank

    def evaluate() -> float:
        engine.eval()
        with torch.no_grad():
            value = loss_of(engine, held_out).item()
        engine.train()
        return value

    start = 0
    if CKPT_DIR and os.path.exists(os.path.join(CKPT_DIR, "latest")):
        path, client = engine.load_checkpoint(CKPT_DIR)  # every rank its own partition
        start = int(client["step"])
        if rank == 0:
            print(f"deepspeed: loaded {path} at step {start}", flush=True)
    elif REQUIRE_CHECKPOINT:
        print(f"deepspeed: no checkpoint in {CKPT_DIR!r} (REQUIRE_CHECKPOINT=1)", file=sys.stderr, flush=True)
        return 1
    first = evaluate()
    if rank == 0:
        print(f"deepspeed: ZeRO stage {ZERO_STAGE}, {size} ranks on {', '.join(map(str, hosts))}, accelerator "
              f"{deepspeed.get_accelerator().device_name()}, backend {torch.distributed.get_backend()}, "
              f"{parameters} parameters, master {os.environ['MASTER_ADDR']}, step {start}, eval loss {first:.6f}",
              flush=True)

    generator = torch.Generator().manual_seed(1000 * rank + start)  # each rank its own batches
    for step in range(start + 1, start + STEPS + 1):
        loss = loss_of(engine, batch(generator, MICRO_BATCH))
        engine.backward(loss)
        engine.step()
        if rank == 0 and (step % 10 == 0 or step == start + STEPS):
            print(f"deepspeed: step {step} train loss {loss.item():.4f}", flush=True)
    last = evaluate()
    if rank == 0:
        print(f"deepspeed: trained steps {start + 1}-{start + STEPS}, eval loss {first:.6f} -> {last:.6f} "
              f"(uniform guess {math.log(VOCAB):.4f})", flush=True)
    if CKPT_DIR:
        engine.save_checkpoint(CKPT_DIR, tag=f"step{start + STEPS}", client_state={"step": start + STEPS})
        if rank == 0:
            print(f"deepspeed: saved {CKPT_DIR}/step{start + STEPS} at step {start + STEPS}, "
                  f"eval loss {last:.6f}", flush=True)
    torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
