#!/usr/bin/env python3
"""Train one model of the draft/target pair on the uint16 token files of tokenizer.py.

  train.py --data DIR --out CKPT.pt --preset target|draft|micro-target|micro-draft
           [--budget-s S] [--max-steps N] [--seed 17] [--curve CURVE.json]

Data: DIR/train.u16 and DIR/heldout.u16. Every step takes `batch` windows of ctx+1 tokens from
train.u16 at offsets drawn from numpy's PCG64 seeded with --seed (the same sequence for target
and draft: step k sees the same windows in both). Held-out loss is the mean cross-entropy over
fixed windows of heldout.u16 (evenly spaced, at most --eval-windows), every --eval-every steps;
the checkpoint kept is the one with the best held-out loss (so training stops helping before it
overfits, and the state written is never an overfitted one).

Schedule: AdamW (betas 0.9/0.95, weight decay 0.1 on matrices), linear warm-up, cosine decay to
10 % of the peak over the run's step count. The step count is --max-steps, or, with --budget-s,
the number of steps that fit in the budget at the speed measured over the first 10 optimizer
steps, capped at the preset's max_epochs passes over train.u16 (it is printed and recorded,
so `--max-steps N` repeats the run without a clock). A run still going at 1.2x the budget stops
there (evaluated, best state kept) and records the steps it made.
CUDA: bf16 autocast (TF32 for what stays float32). CPU: float32.
Deterministic given seed, device and step count (CUDA kernels themselves may not be bitwise
deterministic).

Writes CKPT.pt ({config, state_dict, best_step, best_heldout_loss}) and, with --curve, a JSON
loss curve {preset, config, n_params, steps, tokens_per_step, curve: [{step, tokens, lr,
train_loss, heldout_loss, elapsed_s}], best_step, best_heldout_loss, wall_s, device}.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Config, Llama  # noqa: E402

PRESETS = {
    # ~24.8 M parameters: the target.
    "target": dict(cfg=Config(dim=512, n_layers=7, n_heads=8, n_kv_heads=4, ffn_dim=1408),
                   batch=32, lr=1.5e-3, warmup=150, max_epochs=8),
    # ~1.9 M parameters (13x smaller), tied output: the draft.
    "draft": dict(cfg=Config(dim=160, n_layers=4, n_heads=5, n_kv_heads=5, ffn_dim=432, tied=True),
                  batch=32, lr=3e-3, warmup=150, max_epochs=12),
    # CPU test sizes (same code path, minutes on 2 cores).
    "micro-target": dict(cfg=Config(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=160, ctx=128),
                         batch=8, lr=3e-3, warmup=10, max_epochs=8),
    "micro-draft": dict(cfg=Config(dim=32, n_layers=2, n_heads=2, n_kv_heads=2, ffn_dim=96, ctx=128, tied=True),
                        batch=8, lr=3e-3, warmup=10, max_epochs=8),
}


def log(msg):
    print(msg, flush=True)


def load_tokens(path):
    return np.fromfile(path, dtype="<u2")


class Batches:
    """The seeded batch sequence: step k -> [batch, ctx+1] windows of the train tokens."""

    def __init__(self, tokens, batch, ctx, seed):
        self.tokens, self.batch, self.ctx = tokens, batch, ctx
        self.rng = np.random.Generator(np.random.PCG64(seed))

    def next(self, device):
        offs = self.rng.integers(0, len(self.tokens) - self.ctx - 1, size=self.batch)
        w = np.stack([self.tokens[o:o + self.ctx + 1] for o in offs]).astype(np.int64)
        t = torch.from_numpy(w).to(device, non_blocking=True)
        return t[:, :-1], t[:, 1:]


def heldout_windows(tokens, ctx, n):
    """At most n non-overlapping windows of ctx+1 tokens, evenly spaced over the file."""
    total = (len(tokens) - 1) // ctx
    n = min(n, total)
    stride = total // n
    return np.stack([tokens[i * stride * ctx:i * stride * ctx + ctx + 1] for i in range(n)]).astype(np.int64)


@torch.no_grad()
def heldout_loss(model, windows, device, autocast):
    model.eval()
    losses = []
    for i in range(0, len(windows), 8):
        w = torch.from_numpy(windows[i:i + 8]).to(device)
        with autocast():
            logits = model(w[:, :-1])
        losses.append(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1),
                                      reduction="sum").item())
    model.train()
    return sum(losses) / (windows.shape[0] * (windows.shape[1] - 1))


def lr_at(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    p = min(1.0, (step - warmup) / max(1, steps - warmup))
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))


def main():
    ap = argparse.ArgumentParser(description="train one model of the pair")
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--preset", required=True, choices=sorted(PRESETS))
    ap.add_argument("--budget-s", type=float, default=0, help="wall-clock budget for the training loop (s)")
    ap.add_argument("--max-steps", type=int, default=0)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--eval-windows", type=int, default=64)
    ap.add_argument("--curve", default="")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    if not a.budget_s and not a.max_steps:
        ap.error("give --budget-s or --max-steps")
    t_start = time.time()
    p = PRESETS[a.preset]
    cfg, batch, peak, warmup = p["cfg"], p["batch"], p["lr"], p["warmup"]
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    def autocast():
        if cuda:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return torch.autocast("cpu", enabled=False)

    train_tok = load_tokens(os.path.join(a.data, "train.u16"))
    held_tok = load_tokens(os.path.join(a.data, "heldout.u16"))
    if int(train_tok.max()) >= cfg.vocab:
        sys.exit("train.u16 holds id %d >= vocab %d" % (int(train_tok.max()), cfg.vocab))
    held = heldout_windows(held_tok, cfg.ctx, a.eval_windows)
    model = Llama(cfg).to(dev)
    n_params = model.n_params()
    decay = [q for q in model.parameters() if q.dim() >= 2]
    no_decay = [q for q in model.parameters() if q.dim() < 2]
    opt_kwargs = dict(lr=peak, betas=(0.9, 0.95), eps=1e-8)
    if cuda and "fused" in torch.optim.AdamW.__init__.__code__.co_varnames:
        opt_kwargs["fused"] = True
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}], **opt_kwargs)
    batches = Batches(train_tok, batch, cfg.ctx, a.seed)
    tokens_per_step = batch * cfg.ctx
    device_name = torch.cuda.get_device_name(dev) if cuda else "cpu"
    log("train[%s]: %d params, %s, batch %dx%d, %d train tokens, %d held-out windows, torch %s"
        % (a.preset, n_params, device_name, batch, cfg.ctx, len(train_tok), len(held), torch.__version__))

    steps = a.max_steps or 10 ** 9
    curve, best, best_step, best_state = [], float("inf"), -1, None
    loop_start = time.time()
    t10 = None
    step = 0
    train_loss_acc, n_acc = 0.0, 0
    while step < steps:
        lr = lr_at(step, steps if steps < 10 ** 9 else 10 ** 6, peak, warmup)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = batches.next(dev)
        with autocast():
            logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, cfg.vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        train_loss_acc += loss.detach()  # a device tensor: no host sync per step
        n_acc += 1
        step += 1
        if step == 2:
            if cuda:
                torch.cuda.synchronize()
            t10 = time.time()
        if step == 12 and a.budget_s and not a.max_steps:
            if cuda:
                torch.cuda.synchronize()
            per_step = (time.time() - t10) / 10
            # Evaluations cost about eval_windows/batch steps each; keep 5 % for them and the tail.
            evals = 1 + (a.budget_s / per_step) / a.eval_every
            eval_cost = evals * per_step * max(1, len(held) / batch) * 0.4
            steps = max(20, int((a.budget_s - (time.time() - loop_start) - eval_cost) * 0.95 / per_step) + step)
            steps = min(steps, int(p["max_epochs"] * len(train_tok) / tokens_per_step))
            log("train[%s]: %.1f ms/step, %.0f tokens/s -> %d steps in the %.0f s budget"
                % (a.preset, per_step * 1e3, tokens_per_step / per_step, steps, a.budget_s))
        overrun = a.budget_s and time.time() - loop_start > 1.2 * a.budget_s
        if overrun:
            log("train[%s]: past 1.2x the %.0f s budget at step %d: stopping early" % (a.preset, a.budget_s, step))
            steps = step
        if step % a.eval_every == 0 or step == steps:
            hl = heldout_loss(model, held, dev, autocast)
            el = time.time() - loop_start
            curve.append({"step": step, "tokens": step * tokens_per_step, "lr": lr,
                          "train_loss": float(train_loss_acc) / n_acc, "heldout_loss": hl, "elapsed_s": round(el, 2)})
            train_loss_acc, n_acc = 0.0, 0
            if hl < best:
                best, best_step = hl, step
                best_state = {k: v.detach().float().cpu().clone() for k, v in model.state_dict().items()}
            log("train[%s]: step %d/%d  epoch %.2f  lr %.2e  train %.4f  heldout %.4f (ppl %.2f)  best@%d  %.0f s"
                % (a.preset, step, steps, step * tokens_per_step / len(train_tok), lr, curve[-1]["train_loss"],
                   hl, math.exp(hl), best_step, el))
    wall = time.time() - t_start
    torch.save({"config": cfg.to_dict(), "state_dict": best_state, "best_step": best_step,
                "best_heldout_loss": best, "steps": steps, "seed": a.seed, "preset": a.preset}, a.out)
    log("train[%s]: done, %d steps, best held-out loss %.4f at step %d, %.1f s" % (a.preset, steps, best, best_step, wall))
    if a.curve:
        with open(a.curve, "w") as f:
            json.dump({"preset": a.preset, "config": cfg.to_dict(), "n_params": n_params, "steps": steps,
                       "batch": batch, "peak_lr": peak, "warmup": warmup, "seed": a.seed,
                       "tokens_per_step": tokens_per_step, "train_tokens": int(len(train_tok)),
                       "heldout_windows": int(len(held)), "curve": curve, "best_step": best_step,
                       "best_heldout_loss": best, "wall_s": round(wall, 2), "device": device_name,
                       "torch": torch.__version__}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
