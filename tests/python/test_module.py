"""`import tinyformer` against the CLI: the same numbers from the same checkpoint.

Run by ctest (python.module) with PYTHONPATH at the built module and TINYFORMER at the
executable; a short lesson run (60 steps) is the model every test reads.
"""
import math
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import tinyformer

ROOT = Path(__file__).resolve().parents[2]
CLI = os.environ.get("TINYFORMER", str(ROOT / "build" / "tinyformer"))
SENTENCE = "小丁拿着红色的苹果。"


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("lesson") / "run"
    subprocess.run([CLI, "train", "--config", str(ROOT / "configs" / "lesson12.toml"),
                    "--set", "train.steps=60", "--set", "train.eval_every=0", "--set", "train.threads=1",
                    "--out", str(out)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="session")
def model(run_dir):
    return tinyformer.load(str(run_dir))


def test_load_reads_the_run(model, run_dir):
    assert model.path == str(run_dir / "model.safetensors")
    assert model.step == 60
    assert model.config["model"]["d_model"] == 64 and model.config["model"]["n_heads"] == 2
    assert len(model.vocab) == model.config["model"]["vocab_size"] == 79
    assert "苹" in model.vocab
    assert "D=64 H=2" in repr(model)
    # a run directory and its .safetensors are the same model
    assert tinyformer.load(str(run_dir / "model.safetensors")).vocab == model.vocab


def test_encode_decode_round_trip(model):
    ids = model.encode(SENTENCE)
    assert len(ids) == len(SENTENCE)
    assert [model.vocab[i] for i in ids] == list(SENTENCE)
    assert model.decode(ids) == SENTENCE


def test_weights_are_read_only_views(model, run_dir):
    weights = model.weights()
    assert "blocks.0.attn.q_proj.weight" in weights and weights["tok_emb.weight"].shape == (79, 64)
    again = model.weights()
    w = weights["blocks.1.mlp.fc1.weight"]
    assert np.shares_memory(w, again["blocks.1.mlp.fc1.weight"])  # the model's memory, not copies
    assert w.dtype == np.float32 and not w.flags.writeable
    with pytest.raises(ValueError):
        w[0, 0] = 1.0
    # the checkpoint's bytes, read with numpy alone from the safetensors layout
    raw = (run_dir / "model.safetensors").read_bytes()
    import json
    header_size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + header_size])
    entry = header["lm_head.weight"]
    begin, end = entry["data_offsets"]
    stored = np.frombuffer(raw[8 + header_size + begin:8 + header_size + end], dtype=np.float32).reshape(entry["shape"])
    assert np.array_equal(stored, weights["lm_head.weight"])


def test_an_array_outlives_its_model(run_dir):
    w = tinyformer.load(str(run_dir)).weights()["ln_f.weight"]
    import gc
    gc.collect()
    assert np.isfinite(w).all() and w.shape == (64,)  # the model is kept alive by the array


def test_patterns_are_inspects_attention_npy(model, run_dir, tmp_path):
    subprocess.run([CLI, "inspect", "--checkpoint", str(run_dir), "--text", SENTENCE, "--out", str(tmp_path),
                    "--probes", str(ROOT / "corpus" / "lesson_probes.tsv")],
                   check=True, capture_output=True)
    maps = np.load(tmp_path / "attention.npy")  # [L,H,T,T]
    logits, cache = model.run_with_cache(SENTENCE)
    T = len(SENTENCE)
    assert logits.shape == (T, 79)
    assert maps.shape == (2, 2, T, T)
    for layer in range(2):
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"]
        assert pattern.shape == (2, T, T)
        assert np.array_equal(pattern, maps[layer]), f"layer {layer}: not inspect's attention.npy to the bit"


def test_cache_names_shapes_and_consistency(model):
    logits, cache = model.run_with_cache(SENTENCE)
    T, D, H, d = len(SENTENCE), 64, 2, 32
    for layer in range(2):
        at = f"blocks.{layer}."
        for name in ["hook_resid_pre", "ln1.hook_normalized", "hook_attn_out", "hook_resid_mid",
                     "ln2.hook_normalized", "hook_mlp_out", "hook_resid_post"]:
            assert cache[at + name].shape == (T, D), name
        for name in ["attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_rot_q", "attn.hook_rot_k", "attn.hook_z"]:
            assert cache[at + name].shape == (T, H, d), name
        assert cache[at + "mlp.hook_pre"].shape == (T, 4 * D)
        # The stream: what each branch added, as the stream received it (to the bit here); the
        # branch outputs are the heads through out_proj and the MLP's output, to float32 rounding.
        assert np.array_equal(cache[at + "hook_resid_pre"] + cache[at + "hook_attn_out"], cache[at + "hook_resid_mid"])
        assert np.array_equal(cache[at + "hook_resid_mid"] + cache[at + "hook_mlp_out"], cache[at + "hook_resid_post"])
        w = model.weights()
        np.testing.assert_allclose(cache[at + "hook_attn_out"],
                                   np.einsum("thd,ehd->te", cache[at + "attn.hook_z"],
                                             w[at + "attn.out_proj.weight"].reshape(D, H, d)), rtol=0, atol=1e-5)
        np.testing.assert_allclose(cache[at + "hook_mlp_out"],
                                   cache[at + "mlp.hook_post"] @ w[at + "mlp.fc2.weight"].T + w[at + "mlp.fc2.bias"],
                                   rtol=0, atol=1e-5)
        if layer == 0:
            assert np.array_equal(cache["blocks.0.hook_resid_post"], cache["blocks.1.hook_resid_pre"])
        # The pattern is softmax(q·k / √d) over the earlier positions, from the cached rotated q and k.
        q, k = cache[at + "attn.hook_rot_q"], cache[at + "attn.hook_rot_k"]
        scores = np.einsum("qhd,khd->hqk", q.astype(np.float64), k.astype(np.float64)) / math.sqrt(d)
        scores[:, np.triu(np.ones((T, T), dtype=bool), 1)] = -np.inf
        expected = np.exp(scores - scores.max(-1, keepdims=True))
        expected /= expected.sum(-1, keepdims=True)
        np.testing.assert_allclose(cache[at + "attn.hook_pattern"], expected, rtol=0, atol=2e-5)
        # Each head's output is its pattern times its values.
        z = np.einsum("hqk,khd->qhd", cache[at + "attn.hook_pattern"].astype(np.float64),
                      cache[at + "attn.hook_v"].astype(np.float64))
        np.testing.assert_allclose(cache[at + "attn.hook_z"], z, rtol=0, atol=2e-5)
    # The logits read the final norm through the LM head.
    lm_head = model.weights()["lm_head.weight"]
    np.testing.assert_allclose(cache["ln_final.hook_normalized"] @ lm_head.T, logits, rtol=0, atol=1e-4)


def test_loss_is_the_cross_entropy_of_the_logits(model):
    text = SENTENCE
    logits, _ = model.run_with_cache(text[:-1])
    targets = model.encode(text)[1:]
    logits = logits.astype(np.float64)
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    expected = -np.mean([log_probs[t, target] for t, target in enumerate(targets)])
    assert model.loss(text) == pytest.approx(expected, rel=1e-5)


def test_errors_are_python_exceptions(model, tmp_path):
    with pytest.raises(FileNotFoundError):
        tinyformer.load(str(tmp_path / "no-such-run"))
    with pytest.raises(ValueError, match="Ω"):
        model.encode("小丁Ω")
    with pytest.raises(ValueError, match="context"):
        model.run_with_cache("小" * (model.config["model"]["context"] + 1))
    with pytest.raises(ValueError):
        model.run_with_cache("")
    with pytest.raises(ValueError, match="expected an id"):
        model.decode([0, 79])
    hostile = tmp_path / "hostile.safetensors"
    hostile.write_bytes((2 ** 62).to_bytes(8, "little") + b"{}")
    with pytest.raises(ValueError, match="hostile.safetensors"):
        tinyformer.load(str(hostile))
    not_a_model = tmp_path / "empty"
    not_a_model.mkdir()
    with pytest.raises(ValueError, match="empty"):
        tinyformer.load(str(not_a_model))


def test_threads_get_the_same_numbers(model):
    reference, _ = model.run_with_cache(SENTENCE)
    results, errors = [], []

    def run():
        try:
            for _ in range(5):
                logits, _ = model.run_with_cache(SENTENCE)
                results.append(logits)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    texts = [SENTENCE, SENTENCE[:4], "小华看着绿色的球。", SENTENCE + "谁"]
    references = [model.run(text) for text in texts]
    run_results = []

    def run_decoder(offset):  # run()'s cache is the model's: each thread's texts pull it another way
        try:
            for i in range(40):
                which = (i + offset) % len(texts)
                run_results.append((which, model.run(texts[which])))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(4)]
    threads += [threading.Thread(target=run_decoder, args=(offset,)) for offset in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(results) == 20 and all(np.array_equal(r, reference) for r in results)
    assert len(run_results) == 160 and all(np.array_equal(r, references[which]) for which, r in run_results)


def test_run_does_not_depend_on_the_calls_before_it(model, run_dir):
    """run() keeps the last text's positions and feeds only what a text adds to it: whatever
    came before, a text's logits are a fresh model's, to the bit."""
    text = "小丁拿着红色的苹果。谁拿着苹果？"
    fresh = tinyformer.load(str(run_dir)).run(text)
    histories = [[text[:3]], [text[:-1]], [text + "小丁"], ["小华看着绿色的球。"], [text[:5], text[:9], text[:2]],
                 [text[:4]]]
    for history in histories:
        for before in history:
            model.run(before)
        assert np.array_equal(model.run(text), fresh), history
    # A knocked-out head is not kept for the next call, nor the cache of a run without it.
    model.run(text[:5], ablate=[(1, 1)])
    assert np.array_equal(model.run(text), fresh)
    ablated = tinyformer.load(str(run_dir)).run(text, ablate=[(1, 1)])
    model.run(text[:5])
    assert np.array_equal(model.run(text, ablate=[(1, 1)]), ablated)
    assert not np.array_equal(ablated, fresh)


def test_a_python_loop_of_run_scores_the_probes_as_eval(model):
    """The greedy answers of a Python loop over run() are eval's: the same count, kind by kind."""
    probes_path = ROOT / "corpus" / "lesson_probes.tsv"
    rows = [line.rstrip("\n").split("\t") for line in probes_path.read_text(encoding="utf-8").splitlines(True)
            if line.strip() and not line.startswith("#")]
    vocab, correct = model.vocab, 0
    for prompt, answer in rows:
        text = prompt
        for _ in answer:
            text += vocab[int(np.argmax(model.run(text)[-1]))]
        correct += text[len(prompt):] == answer
    scored = model.probes(str(probes_path))
    assert (correct, len(rows)) == (scored["correct"], scored["total"]) == (correct, 320)


def test_names_filter_keeps_only_what_is_asked_for(model):
    logits, cache = model.run_with_cache(SENTENCE)
    names = list(cache)
    assert len(names) == 1 + 2 * 16 + 1  # hook_embed, 16 per block, ln_final
    for names_filter, kept in [("blocks.1.attn.hook_pattern", ["blocks.1.attn.hook_pattern"]),
                               (["hook_embed", "blocks.0.attn.hook_rot_k"], ["blocks.0.attn.hook_rot_k", "hook_embed"]),
                               (lambda name: name.endswith("hook_z"), ["blocks.0.attn.hook_z", "blocks.1.attn.hook_z"]),
                               ([], [])]:
        filtered_logits, filtered = model.run_with_cache(SENTENCE, names_filter=names_filter)
        assert sorted(filtered) == sorted(kept), names_filter
        assert np.array_equal(filtered_logits, logits)
        for name in kept:
            assert np.array_equal(filtered[name], cache[name]), name
    with pytest.raises(ValueError, match="hook_patern"):
        model.run_with_cache(SENTENCE, names_filter=["blocks.0.attn.hook_patern"])


def test_the_cache_is_read_only_and_outlives_the_model(run_dir):
    _, cache = tinyformer.load(str(run_dir)).run_with_cache(SENTENCE)
    import gc
    gc.collect()
    pattern = cache["blocks.1.attn.hook_pattern"]
    np.testing.assert_allclose(pattern.sum(-1), 1.0, rtol=0, atol=1e-5)  # still the rows of a softmax
    with pytest.raises(ValueError, match="read-only"):
        pattern[0, 0, 0] = 1.0
    assert cache["blocks.0.attn.hook_q"].copy().flags.writeable


def test_help_says_what_load_takes():
    assert "run directory" in tinyformer.load.__doc__


def test_sample_is_the_clis(model, run_dir):
    options = dict(max_new=60, temperature=0.8, top_k=12, top_p=0.95, seed=7)
    cli = subprocess.run([CLI, "sample", "--checkpoint", str(run_dir), "--prompt", "小丁", "--max-new", "60",
                          "--temperature", "0.8", "--top-k", "12", "--top-p", "0.95", "--seed", "7"],
                         check=True, capture_output=True, text=True).stdout
    assert cli == "小丁" + model.sample("小丁", **options) + "\n"
    assert model.sample("小丁", **options) == model.sample("小丁", **options)  # the seed decides
    assert model.sample("小丁", **dict(options, seed=8)) != model.sample("小丁", **options)
    with pytest.raises(ValueError, match="top_k"):
        model.sample("小丁", top_k=1000)


def test_eval_scores_are_evals(model, run_dir):
    import json
    probes = ROOT / "corpus" / "lesson_probes.tsv"
    scored = json.loads(subprocess.run([CLI, "eval", "--checkpoint", str(run_dir), "--json", "--probes", str(probes)],
                                       check=True, capture_output=True, text=True).stdout)
    mine = model.probes(str(probes))
    assert mine["total"] == 320
    assert mine["accuracy"] == scored["probe_accuracy"]
    val_text = (ROOT / "corpus" / "lesson_val.txt").read_text(encoding="utf-8")
    assert model.loss(val_text) == scored["loss"]  # eval's windows, the same sums


def test_ablation_is_inspects(model, run_dir, tmp_path):
    import json
    probes = ROOT / "corpus" / "lesson_probes.tsv"
    subprocess.run([CLI, "inspect", "--checkpoint", str(run_dir), "--out", str(tmp_path), "--probes", str(probes)],
                   check=True, capture_output=True)
    heads = json.loads((tmp_path / "heads.json").read_text())["heads"]
    val_text = (ROOT / "corpus" / "lesson_val.txt").read_text(encoding="utf-8")
    assert len(heads) == 4
    for head in heads:
        where = [(head["layer"], head["head"])]
        for mode in ("zero", "mean"):
            printed = head["ablation"][mode]
            assert model.loss(val_text, ablate=where, mode=mode) == printed["val_loss"], (where, mode)
            assert model.probes(str(probes), ablate=where, mode=mode)["accuracy"] == printed["probe_accuracy"], (where, mode)
    # Knocking a head out changes the logits; two heads at once differ from either alone.
    plain = model.run(SENTENCE)
    one = model.run(SENTENCE, ablate=[(1, 0)])
    both = model.run(SENTENCE, ablate=[(1, 0), (1, 1)])
    assert not np.array_equal(plain, one) and not np.array_equal(one, both)
    # run() is the decoder's arithmetic, run_with_cache() the training forward's: the same
    # logits to float32 rounding, with and without heads knocked out.
    for where in ([], [(1, 0)], [(0, 1), (1, 1)]):
        np.testing.assert_allclose(model.run(SENTENCE, ablate=where), model.run_with_cache(SENTENCE, ablate=where)[0],
                                   rtol=0, atol=1e-4)
    assert np.array_equal(model.run(SENTENCE, ablate=[(1, 0)], mode="mean"),
                          tinyformer.load(model.path).run(SENTENCE, ablate=[(1, 0)], mode="mean"))
    with pytest.raises(ValueError, match="no head"):
        model.run(SENTENCE, ablate=[(2, 0)])
    with pytest.raises(ValueError, match="mode"):
        model.run(SENTENCE, ablate=[(0, 0)], mode="half")


def test_patch_is_inspects(model, run_dir, tmp_path):
    """patch() of each kind's example twin gives circuits.json's patching numbers, to the bit."""
    import json
    subprocess.run([CLI, "inspect", "--checkpoint", str(run_dir), "--out", str(tmp_path),
                    "--probes", str(ROOT / "corpus" / "lesson_probes.tsv")], check=True, capture_output=True)
    kinds = json.loads((tmp_path / "circuits.json").read_text())["patching"]["kinds"]
    assert sorted(kind["kind"] for kind in kinds) == ["colour", "who"]
    for kind in kinds:
        example = kind["example"]
        clean, corrupted = example["clean_prompt"], example["corrupted_prompt"]
        answers = (example["clean_answer"], example["corrupted_answer"])
        each = model.patch(clean, corrupted, answers=answers, position="each")
        assert each["heads"] == [(0, 0), (0, 1), (1, 0), (1, 1)]
        assert each["clean"] == example["clean_logit_difference"]
        assert each["corrupted"] == example["corrupted_logit_difference"]
        assert each["recovered"] == example["recovered_by_position"], kind["kind"]
        # One position, one head: that entry of the table; every position at once differs from it.
        last = model.patch(clean, corrupted, answers=answers, heads=[(1, 1)], position=-1)
        assert last["recovered"] == [example["recovered_by_position"][3][-1]]
        assert last["answers"] == (answers[0][0], answers[1][0])
        everywhere = model.patch(clean, corrupted, answers=answers)
        assert len(everywhere["recovered"]) == 4 and everywhere["recovered"] != [row[-1] for row in each["recovered"]]
    with pytest.raises(ValueError, match="as many as"):
        model.patch(SENTENCE, SENTENCE[:-1])
    with pytest.raises(ValueError, match="no difference"):
        model.patch(SENTENCE, SENTENCE)
    with pytest.raises(ValueError, match="position"):
        model.patch(SENTENCE, SENTENCE, answers=("小", "阿"), position=10)
    with pytest.raises(ValueError, match="no head"):
        model.patch(SENTENCE, SENTENCE, answers=("小", "阿"), heads=[(0, 2)])


def _lesson_set(steps):
    return {"train.steps": steps, "train.eval_every": 10, "train.threads": 1, "logging.log_every": 1}


def test_train_is_the_clis_run_bit_for_bit(tmp_path):
    config = str(ROOT / "configs" / "lesson12.toml")
    subprocess.run([CLI, "train", "--config", config, "--out", str(tmp_path / "cli"),
                    *sum((["--set", f"{k}={v}"] for k, v in _lesson_set(30).items()), [])],
                   check=True, capture_output=True)
    seen = []
    summary = tinyformer.train(config=config, set=_lesson_set(30), out=str(tmp_path / "py"),
                               on_step=lambda *args: seen.append(args))
    for name in ("model.safetensors", "train_state.safetensors"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    assert isinstance(summary, dict) and summary
    # on_step: every step, with the metrics' loss and learning rate; val_loss at evaluations.
    import json
    rows = [json.loads(line) for line in (tmp_path / "py" / "metrics.jsonl").read_text().splitlines()]
    assert [s[0] for s in seen] == list(range(1, 31))
    for args, row in zip(seen, rows):
        assert args[0] == row["step"] and args[1] == row["loss"] and args[2] == row["lr"]
        assert (len(args) == 4) == ("val_loss" in row)
        if len(args) == 4:
            assert args[3] == row["val_loss"]


def test_train_errors_and_callback_exceptions(tmp_path):
    config = str(ROOT / "configs" / "lesson12.toml")
    with pytest.raises(ValueError, match="train.stepz"):
        tinyformer.train(config=config, set={"train.stepz": 3}, out=str(tmp_path / "bad"))
    with pytest.raises(ValueError, match="model.n_heads"):
        tinyformer.train(config=config, set={"model.n_heads": 3}, out=str(tmp_path / "bad"))

    def stop_at_five(step, loss, lr, *val):
        if step == 5:
            raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        tinyformer.train(config=config, set=_lesson_set(50), out=str(tmp_path / "raised"), on_step=stop_at_five)


def test_ctrl_c_saves_a_checkpoint_then_raises_keyboard_interrupt(tmp_path):
    # In a python3 of its own: SIGINT to itself at step 20 of 100000.
    script = f"""
import os, signal, sys, tinyformer
def on_step(step, loss, lr, *val):
    if step == 20:
        os.kill(os.getpid(), signal.SIGINT)
try:
    tinyformer.train(config={str(ROOT / 'configs' / 'lesson12.toml')!r}, set={{"train.steps": 100000, "train.threads": 1}},
                     out={str(tmp_path / 'run')!r}, on_step=on_step)
except KeyboardInterrupt as e:
    print("KeyboardInterrupt:", e)
    sys.exit(3)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "checkpoint saved" in done.stdout
    resumed = tinyformer.load(str(tmp_path / "run"))
    assert 20 <= resumed.step < 100000


def test_gradcheck_is_the_clis():
    import json
    rows = tinyformer.gradcheck()
    cli = json.loads(subprocess.run([CLI, "gradcheck", "--json"], check=True, capture_output=True, text=True).stdout)
    assert [r["name"] for r in rows] == [c["name"] for c in cli["checks"]]
    assert all(r["pass"] for r in rows) and len(rows) > 20
    assert {r["name"]: r["max_rel_error"] for r in rows} == {c["name"]: c["max_rel_error"] for c in cli["checks"]}
