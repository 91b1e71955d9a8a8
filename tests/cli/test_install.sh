#!/usr/bin/env bash
# `cmake --install` gives a complete, relocatable tree that needs nothing from the source:
# the binary, a man page made from the real --help texts, bash and zsh completions, and the
# lesson's configs and corpus as examples; the installed binary trains the lesson from them
# and runs `bench` with no --config, from an empty directory.
source "$(dirname "$0")/common.sh"
build=${TINYFORMER_BUILD_DIR:?set TINYFORMER_BUILD_DIR to the build directory}

cmake --install "$build" --prefix "$scratch/prefix" >"$scratch/install.log" 2>&1 \
  && pass "cmake --install --prefix" || { fail "cmake --install: $(tail -3 "$scratch/install.log")"; finish; }
for file in bin/tinyformer share/man/man1/tinyformer.1.gz share/bash-completion/completions/tinyformer \
            share/zsh/vendor-completions/_tinyformer share/doc/tinyformer/README.md; do
  [[ -s "$scratch/prefix/$file" ]] && pass "installs $file" || fail "no $file in the install tree"
done
for file in "$src"/configs/*.toml "$src"/corpus/*; do
  installed="$scratch/prefix/share/tinyformer/$(basename "$(dirname "$file")")/$(basename "$file")"
  cmp -s "$file" "$installed" || fail "$installed is not a copy of $file"
done
pass "every config and corpus file is in share/tinyformer/"

# The man page holds every subcommand's --help, as the binary prints it now.
command -v man >/dev/null || { fail "man is missing (Debian package man-db; scripts/install-deps.sh --packaging installs it)"; finish; }
man_text=$(LANG=C.UTF-8 MANWIDTH=200 man -l "$scratch/prefix/share/man/man1/tinyformer.1.gz" 2>/dev/null)
[[ "$man_text" == *"tinyformer - train, sample, evaluate and inspect"* ]] && pass "man renders the page" \
  || fail "man -l did not render the page: $(head -5 <<<"$man_text")"
subcommands=$("$tf" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && /^  [a-z]/ {print $1}')
for sub in $subcommands; do
  missing=0
  while IFS= read -r option; do
    grep -qF -- "$option" <<<"$man_text" || { fail "the man page lacks $sub's $option"; missing=1; }
  done < <("$tf" "$sub" --help | grep -o -- '--[a-z][a-z-]*' | sort -u)
  grep -q "^   $sub\$" <<<"$man_text" || { fail "the man page has no section for $sub"; missing=1; }
  [[ $missing -eq 0 ]] && pass "the man page has $sub and each of its options"
done
warnings=$(LANG=C.UTF-8 MANWIDTH=80 man --warnings -l "$scratch/prefix/share/man/man1/tinyformer.1.gz" 2>&1 >/dev/null)
[[ -z "$warnings" ]] && pass "the man page renders without groff warnings" || fail "man warns: $warnings"

# Moved elsewhere, the tree still works: nothing points back into the source or the build.
mv "$scratch/prefix" "$scratch/moved"
installed="$scratch/moved/bin/tinyformer"
# The Python module, when built: in the prefix's site-packages, where python3 finds it.
if [[ -n $(find "$build/python" -name 'tinyformer.cpython-*.so' 2>/dev/null) ]]; then
  site=$(find "$scratch/moved/lib" -path '*/site-packages/tinyformer.cpython-*.so' | head -1)
  [[ -n $site ]] && pass "installs the Python module in ${site#"$scratch/moved/"}" || fail "no Python module under lib/python3.*/site-packages"
  [[ -n $site ]] && PYTHONPATH=$(dirname "$site") /usr/bin/python3 -c 'import tinyformer; assert tinyformer.load' 2>"$scratch/import.err" \
    && pass "python3 imports the installed module" || fail "import tinyformer from the install tree: $(tail -2 "$scratch/import.err")"
fi
mkdir -p "$scratch/empty"
cd "$scratch/empty" || exit 1
strings "$installed" | grep -q -F -e "$src" -e "$(cd "$build" && pwd)" \
  && fail "the installed binary names the source or build directory" || pass "the binary names no source or build path"
env -i PATH=/usr/bin:/bin HOME="$scratch/empty" "$installed" train \
    --config "$scratch/moved/share/tinyformer/configs/lesson12.toml" --out run \
    --set train.steps=2 --set train.batch_size=4 --set train.eval_every=2 --set train.eval_batches=1 \
    --set logging.log_every=1 >"$scratch/train.log" 2>&1 \
  && pass "the moved binary trains the installed lesson config from an empty directory" \
  || fail "training from the installed config: $(tail -3 "$scratch/train.log")"
grep -q "lesson_train.txt" run/config.toml && ! grep -q -F "$src" run/config.toml \
  && pass "... reading the installed corpus, not the source's" || fail "run/config.toml: $(grep path run/config.toml)"
grep -q "probes: .* correct" "$scratch/train.log" && pass "... and scores the installed probes" \
  || fail "no probe score in the log: $(tail -3 "$scratch/train.log")"
out=$(env -i PATH=/usr/bin:/bin "$installed" bench --repeats 1 --steps 1 --set train.batch_size=2 --sample-chars 8 --json 2>&1) \
  && [[ "$out" == *'"config":"lesson12"'* && "$out" == *'"vocab_size":79'* ]] \
  && pass "bench without --config finds the installed lesson config (and its corpus: 79 characters)" \
  || fail "bench from an empty directory: $out"
rm -rf "$scratch/moved/share/tinyformer"
err=$(env -i PATH=/usr/bin:/bin "$installed" bench --repeats 1 --steps 1 2>&1 >/dev/null); code=$?
[[ $code -eq 2 && "$err" == *"no --config given"* ]] && one_line "bench with no config anywhere" \
  || fail "bench with no config anywhere: exit $code, $err"

finish
