#!/usr/bin/env python3
"""tinyformer's PyTorch reference: the model of docs/model.md, written a second time.

tinyformer never needs it. The comparison scripts (compare_with_torch.py,
compare_circuits_with_torch.py, train_vs_torch.py, bench_vs_torch.py) run it beside
tinyformer to show that both compute the same numbers. Needs PyTorch and NumPy; on Debian:
apt-get install -y python3-torch libopenblas0-openmp, then run it with /usr/bin/python3.

  torch_reference.py eval CHECKPOINT TEXT
      the loss over TEXT, cut into windows as docs/model.md says
      → {"loss": nats per character, "bpc": bits per character, "predicted": characters}
  torch_reference.py grads CHECKPOINT TEXT OUT
      the loss and every parameter's gradient on TEXT's first window, written to OUT as
      safetensors under the parameters' names (metadata "loss") → {"loss", "out"}
  torch_reference.py sample CHECKPOINT [--prompt TEXT] [--chars N]
      greedy decoding, nanoGPT's way: each new character is the argmax after running the
      whole model afresh on the last `context` characters (no cache) → {"text": the N new
      characters, without the prompt}
  torch_reference.py bench [--threads 2 --batch 32 --context 64 --steps 50 --d-model 64
                            --heads 2 --layers 2 --vocab 79]
      training tokens/s on random ids (forward, backward, AdamW; after 5 warm-up steps)
      → {"engine", "threads", "batch", "context", "train_tokens_per_s"}
  torch_reference.py train TEXT [key=value ...]
      trains on TEXT (its last val_fraction is validation): AdamW with weight decay on the
      matrices only, linear warm-up then cosine decay, gradients clipped to grad_clip
      → {"config", "train_wall_s", "train_tokens_per_s", "val_loss", "params"}

CHECKPOINT is a run directory or its model.safetensors. Every command prints one JSON line.

train's random draws are a contract: after torch.manual_seed(seed), Model draws its initial
weights module by module in construction order, and each step then draws its window starts
as torch.randint(len(train) - T - 1, (B,)). tinyformer's `train.rng = "torch"` reproduces
these draws, so both programs run the same experiment for the same seed.
"""
import argparse, json, math, os, struct, sys, time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

FORMAT = "tinyformer/1"
LAYER_NORM_EPS = 1e-5
ROPE_BASE = 10000.0


# ---- the model ----

def rope_tables(context, head_width):
    """cos θ and sin θ [context, d/2] with θ[t, j] = t · 10000^(−2j/d), in float64, then float32."""
    pairs = torch.arange(0, head_width, 2, dtype=torch.float64)         # 2j
    frequency = ROPE_BASE ** (-pairs / head_width)
    theta = torch.arange(context, dtype=torch.float64)[:, None] * frequency[None, :]
    return theta.cos().float(), theta.sin().float()


def rotate_pairs(u, cos, sin):
    """RoPE on u [..., T, d]: the pair (u[2j], u[2j+1]) at position t turned by θ[t, j]."""
    T = u.shape[-2]
    cos, sin = cos[:T], sin[:T]
    even, odd = u[..., 0::2], u[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


class Attention(nn.Module):
    """Causal self-attention with H heads; head j owns features j·d … j·d+d−1. No biases."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not a multiple of n_heads {n_heads}")
        self.H = n_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=False)
        self.k_proj = nn.Linear(d_model, d_model, bias=False)
        self.v_proj = nn.Linear(d_model, d_model, bias=False)
        self.out_proj = nn.Linear(d_model, d_model, bias=False)

    def split_heads(self, t):
        """[B,T,D] → [B,H,T,d]"""
        B, T, D = t.shape
        return t.view(B, T, self.H, D // self.H).transpose(1, 2)

    def attend(self, q, k, v):
        """softmax(q kᵀ / √d, future masked) · v, per head: [B,H,T,d] each → [B,H,T,d]."""
        T, d = q.shape[-2], q.shape[-1]
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)
        future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
        return scores.masked_fill(future, float("-inf")).softmax(dim=-1) @ v

    def forward(self, x, rope):
        B, T, D = x.shape
        q, k, v = self.split_heads(self.q_proj(x)), self.split_heads(self.k_proj(x)), self.split_heads(self.v_proj(x))
        if rope is not None:
            q, k = rotate_pairs(q, *rope), rotate_pairs(k, *rope)
        merged = self.attend(q, k, v).transpose(1, 2).reshape(B, T, D)
        return self.out_proj(merged)


class MLP(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.fc1 = nn.Linear(d_model, 4 * d_model)
        self.fc2 = nn.Linear(4 * d_model, d_model)

    def forward(self, h):
        return self.fc2(F.gelu(self.fc1(h), approximate="tanh"))


class Block(nn.Module):
    """Pre-norm: x + attention(LN(x)), then x + MLP(LN(x))."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model, eps=LAYER_NORM_EPS)
        self.attn = Attention(d_model, n_heads)
        self.ln2 = nn.LayerNorm(d_model, eps=LAYER_NORM_EPS)
        self.mlp = MLP(d_model)

    def forward(self, x, rope):
        x = x + self.attn(self.ln1(x), rope)
        return x + self.mlp(self.ln2(x))


class Model(nn.Module):
    """The whole model. Its modules are made in the order of docs/model.md's table, which is
    also the order their initial weights are drawn in (PyTorch's default initialisation)."""

    def __init__(self, vocab_size, d_model=64, n_heads=2, n_layers=2, context=64, positions="rope"):
        super().__init__()
        if positions not in ("rope", "learned"):
            raise ValueError(f"positions {positions!r}, expected 'rope' or 'learned'")
        self.context, self.positions = context, positions
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        if positions == "learned":
            self.pos_emb = nn.Embedding(context, d_model)
        self.blocks = nn.ModuleList([Block(d_model, n_heads) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model, eps=LAYER_NORM_EPS)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        if positions == "rope":  # buffers, not parameters: not in the checkpoint
            cos, sin = rope_tables(context, d_model // n_heads)
            self.register_buffer("rope_cos", cos, persistent=False)
            self.register_buffer("rope_sin", sin, persistent=False)

    def forward(self, idx, targets=None):
        """idx [B,T] ids → (logits [B,T,V], the mean cross-entropy against targets or None)."""
        T = idx.shape[1]
        if T > self.context:
            raise ValueError(f"a window of {T} characters, but the context is {self.context}")
        x = self.tok_emb(idx)
        if self.positions == "learned":
            x = x + self.pos_emb.weight[:T]
        rope = (self.rope_cos, self.rope_sin) if self.positions == "rope" else None
        for block in self.blocks:
            x = block(x, rope)
        logits = self.lm_head(self.ln_f(x))
        loss = None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss


# ---- checkpoints and texts ----

def fail(message):
    sys.exit(f"torch_reference.py: {message}")


def read_safetensors(path):
    """→ ({name: float32 tensor}, {metadata key: string})"""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        fail(f"{path}: {len(blob)} bytes, too short for a safetensors file")
    (header_length,) = struct.unpack_from("<Q", blob)
    if 8 + header_length > len(blob):
        fail(f"{path}: header of {header_length} bytes in a file of {len(blob)}")
    header = json.loads(blob[8:8 + header_length].decode("utf-8"))
    data = blob[8 + header_length:]
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, entry in header.items():
        if entry["dtype"] != "F32":
            fail(f"{path}: {name} is {entry['dtype']}, expected F32")
        begin, end = entry["data_offsets"]
        shape = entry["shape"]
        if end - begin != 4 * math.prod(shape) or end > len(data):
            fail(f"{path}: {name}: data_offsets [{begin}, {end}] do not hold shape {shape}")
        tensors[name] = torch.from_numpy(np.frombuffer(data, dtype="<f4", count=(end - begin) // 4,
                                                       offset=begin).copy()).reshape(shape)
    return tensors, metadata


def write_safetensors(path, tensors, metadata):
    """Tensors sorted by name, the JSON header compact and padded with spaces to a multiple
    of 8 bytes (the bytes tinyformer's writer makes); written to a temporary file, then renamed."""
    header, chunks, offset = {"__metadata__": metadata}, [], 0
    for name in sorted(tensors):
        raw = tensors[name].detach().to(torch.float32).contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    temporary = f"{path}.tmp{os.getpid()}"
    with open(temporary, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))
    os.replace(temporary, path)


def load(path):
    """A tinyformer checkpoint (a run directory or its model.safetensors) → (Model, vocabulary)."""
    if os.path.isdir(path):
        path = os.path.join(path, "model.safetensors")
    tensors, metadata = read_safetensors(path)
    if metadata.get("format") != FORMAT:
        fail(f"{path}: format {metadata.get('format')!r}, expected {FORMAT!r}")
    for key in ("config", "vocab"):
        if key not in metadata:
            fail(f"{path}: __metadata__ has no {key}")
    m = json.loads(metadata["config"])["model"]
    vocab = json.loads(metadata["vocab"])
    model = Model(len(vocab), m["d_model"], m["n_heads"], m["n_layers"], m["context"], m.get("positions", "rope"))
    expected = set(model.state_dict())
    if set(tensors) != expected:
        fail(f"{path}: tensors differ from docs/model.md's for its config: missing "
             f"{sorted(expected - set(tensors))}, unknown {sorted(set(tensors) - expected)}")
    model.load_state_dict(tensors)
    return model.eval(), vocab


def read_text(path):
    """As tinyformer reads a text: UTF-8, a leading byte-order mark dropped, CRLF and CR as \\n."""
    with open(path, encoding="utf-8-sig") as f:
        return f.read()


def encode(text, vocab, what):
    index = {c: i for i, c in enumerate(vocab)}
    unknown = sorted(set(text) - set(index))
    if unknown:
        fail(f"{what}: characters not in the checkpoint's vocabulary: {unknown}")
    return [index[c] for c in text]


def windows(ids, T):
    """ids[k·T : k·T+T+1] for k = 0, 1, …, each with at least 2 ids → (inputs [1,n], targets [1,n])."""
    ids = torch.as_tensor(ids)
    for start in range(0, len(ids) - 1, T):
        window = ids[start:start + T + 1]
        yield window[:-1][None], window[1:][None]


def text_loss(model, ids):
    """(mean loss over every predicted character of every window, how many were predicted)"""
    total, count = 0.0, 0
    with torch.no_grad():
        for inputs, targets in windows(ids, model.context):
            _, loss = model(inputs, targets)
            total += loss.item() * targets.numel()
            count += targets.numel()
    return total / count, count


# ---- the commands ----

def command_eval(a):
    model, vocab = load(a.checkpoint)
    ids = encode(read_text(a.text), vocab, a.text)
    if len(ids) < 2:
        fail(f"{a.text}: fewer than 2 characters, nothing to predict")
    loss, predicted = text_loss(model, ids)
    print(json.dumps({"loss": loss, "bpc": loss / math.log(2), "predicted": predicted}))


def command_grads(a):
    model, vocab = load(a.checkpoint)
    ids = encode(read_text(a.text), vocab, a.text)
    if len(ids) < 2:
        fail(f"{a.text}: fewer than 2 characters, nothing to predict")
    inputs, targets = next(windows(ids, model.context))
    _, loss = model(inputs, targets)
    loss.backward()
    write_safetensors(a.out, {name: p.grad for name, p in model.named_parameters()}, {"loss": repr(loss.item())})
    print(json.dumps({"loss": loss.item(), "out": a.out}))


def command_sample(a):
    model, vocab = load(a.checkpoint)
    if not a.prompt:
        fail("--prompt: empty, expected at least one character to continue")
    if a.chars < 1:
        fail(f"--chars: {a.chars}, expected at least 1")
    ids = encode(a.prompt, vocab, "--prompt")
    new = []
    with torch.no_grad():
        for _ in range(a.chars):
            logits, _ = model(torch.tensor([ids[-model.context:]]))
            best = int(logits[0, -1].argmax())  # the first of equal maxima, as tinyformer's greedy
            ids.append(best)
            new.append(vocab[best])
    sys.stdout.reconfigure(encoding="utf-8")
    print(json.dumps({"text": "".join(new)}, ensure_ascii=False))


def command_bench(a):
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Model(a.vocab, a.d_model, a.heads, a.layers, a.context)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)  # looked up now: torch_variants.py swaps it
    batches = torch.randint(0, a.vocab, (a.steps + 5, a.batch, a.context + 1))
    for step in range(a.steps + 5):
        if step == 5:
            start = time.perf_counter()
        _, loss = model(batches[step, :, :-1], batches[step, :, 1:])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    tokens_per_s = a.steps * a.batch * a.context / (time.perf_counter() - start)
    print(json.dumps({"engine": f"torch {torch.__version__}", "threads": a.threads, "batch": a.batch,
                      "context": a.context, "train_tokens_per_s": round(tokens_per_s)}))


# train's settings and their defaults (nanoGPT's Shakespeare baseline, configs/shakespeare_char.toml)
TRAIN_DEFAULTS = dict(d_model=128, n_heads=4, n_layers=4, context=64, batch=12, steps=2000,
                      lr=1e-3, min_lr=1e-4, warmup=100, weight_decay=0.1, beta1=0.9, beta2=0.99, eps=1e-8,
                      grad_clip=1.0, positions="rope", threads=2, seed=1337, val_fraction=0.1)


def learning_rate(step, c):
    """Linear warm-up over c["warmup"] steps, then cosine decay from lr to min_lr."""
    if step < c["warmup"]:
        return c["lr"] * (step + 1) / (c["warmup"] + 1)
    progress = min(1.0, (step - c["warmup"]) / max(1, c["steps"] - c["warmup"]))
    return c["min_lr"] + 0.5 * (1 + math.cos(math.pi * progress)) * (c["lr"] - c["min_lr"])


def train(c, text, on_step=None):
    """Trains a model on text with settings c (every key of TRAIN_DEFAULTS); on_step(step,
    loss) after each step. → (model, vocabulary, validation loss, training seconds)"""
    torch.set_num_threads(c["threads"])
    torch.manual_seed(c["seed"])
    vocab = sorted(set(text))
    ids = torch.tensor(encode(text, vocab, "the text"))
    split = int((1 - c["val_fraction"]) * len(ids))
    train_ids, val_ids = ids[:split], ids[split:]
    T, B = c["context"], c["batch"]
    model = Model(len(vocab), c["d_model"], c["n_heads"], c["n_layers"], T, c["positions"])
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    vectors = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": matrices, "weight_decay": c["weight_decay"]},
                                   {"params": vectors, "weight_decay": 0.0}],
                                  lr=c["lr"], betas=(c["beta1"], c["beta2"]), eps=c["eps"])
    start = time.perf_counter()
    for step in range(c["steps"]):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, c)
        starts = torch.randint(len(train_ids) - T - 1, (B,))
        inputs = torch.stack([train_ids[s:s + T] for s in starts])
        targets = torch.stack([train_ids[s + 1:s + T + 1] for s in starts])
        _, loss = model(inputs, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), c["grad_clip"])
        optimizer.step()
        if on_step:
            on_step(step, loss.item())
    seconds = time.perf_counter() - start
    val_loss, _ = text_loss(model, val_ids)
    return model, vocab, val_loss, seconds


def command_train(a):
    c = dict(TRAIN_DEFAULTS)
    for setting in a.settings:
        key, eq, value = setting.partition("=")
        if not eq or key not in TRAIN_DEFAULTS:
            fail(f"train: {setting!r}, expected key=value with a key among {', '.join(TRAIN_DEFAULTS)}")
        c[key] = type(TRAIN_DEFAULTS[key])(value)
    model, _, val_loss, seconds = train(c, read_text(a.text))
    print(json.dumps({"config": c, "train_wall_s": round(seconds, 1),
                      "train_tokens_per_s": round(c["steps"] * c["batch"] * c["context"] / seconds),
                      "val_loss": round(val_loss, 4), "params": sum(p.numel() for p in model.parameters())}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = p.add_subparsers(dest="command", required=True)
    c = commands.add_parser("eval", help="loss and bits per character on a text")
    c.add_argument("checkpoint")
    c.add_argument("text")
    c = commands.add_parser("grads", help="loss and gradients on a text's first window, as safetensors")
    c.add_argument("checkpoint")
    c.add_argument("text")
    c.add_argument("out")
    c = commands.add_parser("sample", help="greedy continuation, recomputed on the last context characters")
    c.add_argument("checkpoint")
    c.add_argument("--prompt", default="\n", help="the text to continue (default: a newline)")
    c.add_argument("--chars", type=int, default=200, help="characters to generate (default 200)")
    c = commands.add_parser("bench", help="training tokens/s on random ids")
    for name, default in dict(threads=2, batch=32, context=64, steps=50, d_model=64, heads=2, layers=2,
                              vocab=79).items():
        c.add_argument("--" + name.replace("_", "-"), type=int, default=default)
    c = commands.add_parser("train", help="train on a text and print the validation loss")
    c.add_argument("text")
    c.add_argument("settings", nargs="*", metavar="key=value")
    a = p.parse_args()
    {"eval": command_eval, "grads": command_grads, "sample": command_sample, "bench": command_bench,
     "train": command_train}[a.command](a)


if __name__ == "__main__":
    main()
