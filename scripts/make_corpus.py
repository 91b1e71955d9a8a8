#!/usr/bin/env python3
"""Generate the tinyformer lesson corpus (deterministic, stdlib only).

Each story is one line built around the lesson sentence "小丁拿着红色的苹果。":

    {name}{verb}{colour}的{object}。谁{verb}{object}？{name}。{object}是什么颜色？{colour}。

The answers (the name and the colour) always appear verbatim earlier in the
same story, so answering is a pure copy task.  Validation stories use
(name, colour, object) triples that never occur in training; every name,
colour and object on its own does occur in training.

Writes (relative to the repository root):
    corpus/lesson_train.txt   training stories, one per line
    corpus/lesson_val.txt     validation stories (held-out triples), one per line
    corpus/lesson_probes.tsv  prompt<TAB>answer, both question kinds per val story

Usage: python3 scripts/make_corpus.py
"""

import os
import random

SEED = 20240601
VOCAB_SIZE = 79          # lesson vocabulary: distinct code points over all files
MAX_CONTEXT = 64         # model context length (characters)
N_TRAIN = 2400           # training stories (repetition of triples is fine)
N_VAL = 160              # validation stories (distinct held-out triples)
HOLDOUT_FRACTION = 0.12  # fraction of (name, colour, object) triples held out

NAMES = [
    "小丁", "小明", "小华", "小强", "小美", "小刚", "小文", "小宝",
    "阿龙", "阿月", "阿英", "阿杰", "阿军", "阿亮", "阿芳", "阿平",
]
COLOURS = [
    "红色", "蓝色", "绿色", "黄色", "白色", "黑色", "紫色", "灰色",
    "粉色", "橙色",
]
VERBS = ["拿着", "看着", "买了", "画了", "洗了", "丢了"]
OBJECTS = [
    "苹果", "帽子", "杯子", "鞋子", "书包", "花", "球", "伞", "车",
    "笔", "碗", "风筝", "裙子", "毛衣", "椅子", "盒子", "气球", "手套",
    "船", "灯", "瓶子", "箱子", "桌子", "衬衫", "铅笔", "被子",
]
# Characters of the story/question templates (besides the slot fillers).
TEMPLATE_CHARS = set("\n。？谁的是什么颜色")


def story_parts(name, verb, colour, obj):
    """Return the story as (prefix, answer) segments, in reading order."""
    who_prompt = f"{name}{verb}{colour}的{obj}。谁{verb}{obj}？"
    colour_prompt = f"{who_prompt}{name}。{obj}是什么颜色？"
    line = f"{colour_prompt}{colour}。"
    return line, who_prompt, colour_prompt


def check_roles():
    """Every character belongs to exactly one role, so answers are unambiguous."""
    roles = {
        "name": set("".join(NAMES)),
        "colour": set("".join(c[:-1] for c in COLOURS)),
        "verb": set("".join(VERBS)),
        "object": set("".join(OBJECTS)),
        "template": TEMPLATE_CHARS,
    }
    assert all(c.endswith("色") and len(c) == 2 for c in COLOURS)
    assert all(len(n) == 2 for n in NAMES)
    assert all(1 <= len(o) <= 2 for o in OBJECTS)
    for lst in (NAMES, COLOURS, VERBS, OBJECTS):
        assert len(lst) == len(set(lst)), f"duplicate entry in {lst}"
    keys = sorted(roles)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            shared = roles[a] & roles[b]
            assert not shared, f"characters shared by {a} and {b}: {shared}"
    return roles


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_dir = os.path.join(root, "corpus")
    os.makedirs(out_dir, exist_ok=True)

    check_roles()
    rng = random.Random(SEED)

    # Split (name, colour, object) triples into training and held-out sets.
    triples = [(n, c, o) for n in NAMES for c in COLOURS for o in OBJECTS]
    rng.shuffle(triples)
    n_hold = int(round(len(triples) * HOLDOUT_FRACTION))
    held_out = triples[:n_hold]
    train_triples = triples[n_hold:]
    held_set = set(held_out)

    # Every name, colour and object must still occur in training.
    for idx, lst in ((0, NAMES), (1, COLOURS), (2, OBJECTS)):
        assert {t[idx] for t in train_triples} == set(lst)

    # Training stories: random training triple + random verb.
    train_lines = []
    for _ in range(N_TRAIN):
        n, c, o = rng.choice(train_triples)
        v = rng.choice(VERBS)
        train_lines.append(story_parts(n, v, c, o)[0])

    # Validation stories: distinct held-out triples + random verb.
    assert N_VAL <= len(held_out)
    val_lines, probes = [], []
    for n, c, o in held_out[:N_VAL]:
        v = rng.choice(VERBS)
        line, who_prompt, colour_prompt = story_parts(n, v, c, o)
        val_lines.append(line)
        probes.append((who_prompt, n))
        probes.append((colour_prompt, c))

    # Sanity checks.
    lesson = "小丁拿着红色的苹果。谁拿着苹果？小丁。苹果是什么颜色？红色。"
    assert lesson in train_lines, "the lesson sentence's story must be in training"
    train_text = "".join(l + "\n" for l in train_lines)
    val_text = "".join(l + "\n" for l in val_lines)
    probe_text = "".join(f"{p}\t{a}\n" for p, a in probes)
    for (n, c, o) in held_out:
        for v in VERBS:
            assert f"{n}{v}{c}的{o}。" not in train_text
    for line in train_lines + val_lines:
        assert len(line) + 1 <= MAX_CONTEXT, line
    for p, a in probes:
        assert len(p) + len(a) <= MAX_CONTEXT
        assert a in p  # answer is copyable from the prompt
        assert any(l.startswith(p + a) for l in val_lines)
    for text in (train_text, val_text, probe_text):
        assert "\r" not in text and "\ufeff" not in text
    assert "\t" not in train_text and "\t" not in val_text
    assert all(probe_text.split("\n")[i].count("\t") == 1
               for i in range(len(probes)))

    # Vocabulary: all code points of all files; the probe TAB is a field
    # separator, not a token, so it is excluded.
    vocab = sorted(set(train_text) | set(val_text) | set(probe_text.replace("\t", "")))
    assert len(vocab) == VOCAB_SIZE, f"vocabulary has {len(vocab)} characters, want {VOCAB_SIZE}"
    # Training text alone must already cover the whole vocabulary.
    assert set(train_text) == set(vocab)

    for fname, text in (("lesson_train.txt", train_text),
                        ("lesson_val.txt", val_text),
                        ("lesson_probes.tsv", probe_text)):
        with open(os.path.join(out_dir, fname), "w", encoding="utf-8", newline="\n") as f:
            f.write(text)

    n_who = sum(1 for _, a in probes if a in NAMES)
    n_colour = sum(1 for _, a in probes if a in COLOURS)
    assert n_who + n_colour == len(probes)
    total_chars = len(train_text) + len(val_text) + len(probe_text)
    print(f"stories: train {len(train_lines)}, val {len(val_lines)} "
          f"(held-out triples {len(held_out)} of {len(triples)})")
    print(f"characters: train {len(train_text)}, val {len(val_text)}, "
          f"probes {len(probe_text)}, total {total_chars}")
    print(f"distinct characters: {len(vocab)}")
    print(f"probes: {len(probes)} (who {n_who}, colour {n_colour})")


if __name__ == "__main__":
    main()
