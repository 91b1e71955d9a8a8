#!/usr/bin/python3
"""The PyTorch reference's bench, run in one of PyTorch's ways of computing the same model.

  torch_variants.py info
  torch_variants.py check-sdpa
  torch_variants.py bench [--attention naive|sdpa] [--compile] [--autocast] [torch_reference.py bench options]

torch_reference.py, the PyTorch implementation of docs/model.md, sits beside this file; it is
imported unchanged and patched here, so that every variant is the same model and the same
training step (forward, cross-entropy, backward, gradient clipping to norm 1.0, AdamW):

  --attention naive  torch_reference.py's own attention: q kᵀ, a causal mask, softmax, then v
  --attention sdpa   F.scaled_dot_product_attention(q, k, v, is_causal=True), PyTorch 2's
                     fused attention (on CPU, its flash-attention kernel)
  --compile          the model under torch.compile (Inductor: generated C++ kernels; needs
                     g++ and libtorch-dev; its first steps compile, and the bench times
                     only the steps after its five warm-up steps)
  --autocast         the forward under torch.autocast("cpu", dtype=torch.bfloat16), the
                     backward outside it, as PyTorch's mixed-precision recipe says

info prints PyTorch's version and the BLAS library its products run on (OpenBLAS, MKL, or
the reference BLAS a minimal Debian root has until libopenblas0-openmp is installed, many
times slower); check-sdpa computes one batch's loss and gradients both ways on the same
weights and prints how far apart they are. Run by scripts/bench_vs_torch.py, with this
machine's PyTorch or a Debian 13 root's (scripts/lib/torch-root.sh).
"""
import json, sys

import torch
import torch.nn.functional as F

import torch_reference  # beside this file, which Python puts first on sys.path

naive_attention = torch_reference.Attention.attend


def sdpa_attention(self, q, k, v):
    """torch_reference.Attention.attend as one fused call: scores, mask, softmax and mix."""
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)  # scale 1/sqrt(d), as the naive one


class ClippedAdamW(torch.optim.AdamW):
    """AdamW whose step first clips the gradients' global norm to 1.0, as tinyformer's step does."""

    def step(self, closure=None):
        torch.nn.utils.clip_grad_norm_([p for group in self.param_groups for p in group["params"]], 1.0)
        return super().step(closure)


def blas_library():
    """The BLAS library this process's products run on, read from its mapped files after one."""
    torch.randn(64, 64) @ torch.randn(64, 64)
    with open("/proc/self/maps") as maps:
        names = {line.split("/")[-1].strip() for line in maps if ".so" in line}
    for kind in ("openblas", "mkl", "blis"):
        if any(kind in name for name in names):
            return kind
    return "reference" if any(name.startswith("libblas.so") for name in names) else "none found"


def info():
    # The vector code PyTorch's own kernels run (ATEN_CPU_CAPABILITY lowers it), 2.x only.
    capability = torch.backends.cpu.get_cpu_capability() if hasattr(torch.backends, "cpu") else "unknown"
    print(json.dumps({"torch": torch.__version__, "blas": blas_library(), "threads": torch.get_num_threads(),
                      "cpu_capability": capability}))


def check_sdpa():
    """One batch's loss and every gradient, naive and fused, from the same weights."""
    torch.manual_seed(0)
    model = torch_reference.Model(79, 64, 2, 2, 64)
    batch = torch.randint(0, 79, (8, 65))

    def loss_and_grads():
        model.zero_grad(set_to_none=True)
        _, loss = model(batch[:, :-1], batch[:, 1:])
        loss.backward()
        return loss.item(), [p.grad.clone() for p in model.parameters()]

    torch_reference.Attention.attend = naive_attention
    naive_loss, naive_grads = loss_and_grads()
    torch_reference.Attention.attend = sdpa_attention
    sdpa_loss, sdpa_grads = loss_and_grads()
    worst = max((a - b).abs().max().item() / max(a.abs().max().item(), 1e-30) for a, b in zip(naive_grads, sdpa_grads))
    print(json.dumps({"loss_naive": naive_loss, "loss_sdpa": sdpa_loss, "loss_difference": abs(naive_loss - sdpa_loss),
                      "worst_gradient_difference": worst}))


def bench(args):
    torch.optim.AdamW = ClippedAdamW
    attention = "naive"
    compiled = autocast = False
    rest = []
    it = iter(args)
    for arg in it:
        if arg == "--attention":
            attention = next(it)
        elif arg == "--compile":
            compiled = True
        elif arg == "--autocast":
            autocast = True
        else:
            rest.append(arg)
    if attention not in ("naive", "sdpa"):
        sys.exit(f"torch_variants.py: --attention {attention}, expected naive or sdpa")
    torch_reference.Attention.attend = sdpa_attention if attention == "sdpa" else naive_attention
    if autocast:
        forward = torch_reference.Model.forward

        def autocast_forward(self, *a, **k):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return forward(self, *a, **k)

        torch_reference.Model.forward = autocast_forward
    if compiled:
        model_class = torch_reference.Model
        torch_reference.Model = lambda *a, **k: torch.compile(model_class(*a, **k))
    sys.argv = ["torch_reference.py", "bench"] + rest
    torch_reference.main()


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "info":
        info()
    elif command == "check-sdpa":
        check_sdpa()
    elif command == "bench":
        bench(sys.argv[2:])
    else:
        sys.exit(__doc__)
