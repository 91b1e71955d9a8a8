#!/usr/bin/env python3
"""Writes tests/data/torch_draws.json: numbers drawn by PyTorch's own CPU generator, which
tests/test_torch_rng.cpp holds TorchRng and initialise_like_torch to.

Needs Debian's PyTorch (apt-get install -y python3-torch libopenblas0-openmp); run with
/usr/bin/python3 from the project's root. The tests themselves only read the JSON.
"""
import importlib.util, json, math, os

import torch

spec = importlib.util.spec_from_file_location("torch_reference", os.path.join("scripts", "torch_reference.py"))
ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)

draws = {"torch": torch.__version__}

# One stream, seed 1337, in this order (the test repeats it):
torch.manual_seed(1337)
draws["normal_40"] = torch.empty(40).normal_().tolist()        # two blocks of 16, then a redrawn tail
draws["normal_5"] = torch.empty(5).normal_(0.5, 2.0).tolist()   # the scalar path: pairs, one sine kept
draws["normal_3"] = torch.empty(3).normal_().tolist()           # starts with the kept sine
w = torch.empty(8, 64)
torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5))               # nn.Linear's weight: U(±1/√64)
draws["kaiming_8x64"] = w.flatten().tolist()
draws["randint_1003789"] = torch.randint(1003789, (20,)).tolist()

# A small model as torch_reference.py's Model initialises it after torch.manual_seed(7).
for positions in ("rope", "learned"):
    torch.manual_seed(7)
    m = ref.Model(11, d_model=16, n_heads=2, n_layers=1, context=8, positions=positions)
    draws["model_" + positions] = {k: v.flatten().tolist() for k, v in m.state_dict().items()}
    draws["model_" + positions + "_next_randint_100"] = torch.randint(100, (4,)).tolist()



class Float32(json.JSONEncoder):  # 9 significant digits: enough to give back each float32 exactly
    def iterencode(self, o, _one_shot=False):
        if isinstance(o, float):
            yield "%.9g" % o
        elif isinstance(o, list):
            yield "[" + ",".join("".join(self.iterencode(v)) for v in o) + "]"
        elif isinstance(o, dict):
            yield "{" + ",".join(json.dumps(k) + ":" + "".join(self.iterencode(v)) for k, v in o.items()) + "}\n"
        else:
            yield json.dumps(o)


with open(os.path.join("tests", "data", "torch_draws.json"), "w") as f:
    f.write("".join(Float32().iterencode(draws)))
