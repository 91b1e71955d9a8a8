#!/usr/bin/env bash
# The command line as a new user meets it: --version says what made the binary (and a run
# says it too, in summary.json and the checkpoint); an unknown subcommand or option — for
# every subcommand — is one line naming it and the nearest valid word, exit 2.
source "$(dirname "$0")/common.sh"

# --- --version -----------------------------------------------------------------------------
version=$("$tf" --version); code=$?
[[ $code -eq 0 ]] && pass "--version exits 0" || fail "--version: exit $code"
first=$(head -1 <<<"$version")
project_version=$(sed -n 's/^project(tinyformer VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[[ -n "$project_version" && "$first" == "tinyformer $project_version"* ]] \
  && pass "the first line is 'tinyformer <CMake project version>': $first" \
  || fail "first line '$first', expected 'tinyformer $project_version ...'"
# Built from a clone (CI's and ours): the commit the binary was built from.
if command -v git >/dev/null && git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  commit=$(git -C "$src" rev-parse --short=7 HEAD)
  expect_in "$first" "$commit" "--version names the commit, $commit"
fi
dnnl_header=$(sed -n 's/^#define DNNL_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' \
  /usr/include/oneapi/dnnl/dnnl_version.h | paste -sd.)
expect_in "$version" "oneDNN $dnnl_header" "--version names the oneDNN version ($dnnl_header)"
machine=$(binary_machine)
if [[ $machine != aarch64 ]]; then
  expect_in "$version" "dispatching to AVX" "--version names the instruction set oneDNN dispatches to"
  # ONEDNN_MAX_CPU_ISA lowers it, and --version must show what is in effect, not what the CPU has.
  isa_avx2=$(ONEDNN_MAX_CPU_ISA=AVX2 "$tf" --version)
  expect_in "$isa_avx2" "dispatching to AVX2 " "--version shows the ISA in effect under ONEDNN_MAX_CPU_ISA=AVX2"
else  # oneDNN's cpu_isa names x86's sets only: on 64-bit Arm the binary says aarch64
  expect_in "$version" "dispatching to aarch64 on this CPU" "--version names the instruction set oneDNN dispatches to"
fi
# The licence: the SPDX identifier CMakeLists.txt sets, which LICENSE's first line names.
spdx=$(sed -n 's/^set(TINYFORMER_LICENSE \([A-Za-z0-9.-]*\)).*/\1/p' "$src/CMakeLists.txt")
license_title=$(head -1 "$src/LICENSE")
[[ -n "$spdx" && "$license_title" == "$spdx License" ]] && pass "LICENSE is the $spdx licence CMakeLists.txt names" \
  || fail "LICENSE's first line '$license_title' does not name CMakeLists.txt's licence '$spdx'"
expect_in "$version" "licence: $spdx (SPDX identifier" "--version names the licence, $spdx"
# The compiler that built it, as CMake found it (GCC for Release, clang for the ASan suite).
cxx=${TINYFORMER_CXX:?set TINYFORMER_CXX to the compiler of the build}
case "${TINYFORMER_CXX_ID:-}" in
  GNU) compiler_name=GCC ;;
  Clang) compiler_name=clang ;;
  *) compiler_name="${TINYFORMER_CXX_ID:-?}" ;;
esac
expect_in "$version" "built with $compiler_name ${TINYFORMER_CXX_VERSION:-?}" \
  "--version names the compiler and its version: $compiler_name ${TINYFORMER_CXX_VERSION:-?}"

# The instruction sets it was built for and those this CPU has, each worked out here another
# way: the compiler's macros for the build's -march, and /proc/cpuinfo's flags. (x86-64's;
# on 64-bit Arm, below.)
if [[ $machine != aarch64 ]]; then
describe_sets() {  # describe_sets SSE4.2 AVX2 ... → "x86-64-v3 (SSE4.2 AVX2 FMA)", as --version words it
  local sets=" $* " level=x86-64
  [[ $sets == *" SSE4.2 "* ]] && level=x86-64-v2
  [[ $sets == *" SSE4.2 "* && $sets == *" AVX2 "* && $sets == *" FMA "* ]] && level=x86-64-v3
  [[ $level == x86-64-v3 && $sets == *" AVX-512 "* ]] && level=x86-64-v4
  echo "$level (${*:-SSE2})"
}
march=(); build="portable (no -march)"  # after the build type: Release, Debug (the sanitizers' builds), ...
[[ "$version" == *"-march=native"* ]] && march=(-march=native) build="-march=native"
macros=$("$cxx" "${march[@]}" -dM -E -x c++ /dev/null)
has_macros() { local m; for m in "$@"; do grep -q "#define __${m}__ 1" <<<"$macros" || return 1; done; }
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has_flags() {  # the same names as /proc/cpuinfo spells them: lower case, avx512_bf16
  local m f; for m in "$@"; do f=${m,,}; f=${f/avx512bf16/avx512_bf16}; [[ $flags == *" $f "* ]] || return 1; done
}
sets_with() {  # sets_with TEST: the sets, in --version's words, whose every part TEST finds
  local sets=()
  $1 SSE4_2 SSSE3 POPCNT && sets+=(SSE4.2)
  $1 AVX2 && sets+=(AVX2)
  $1 FMA && sets+=(FMA)
  $1 AVX512F AVX512BW AVX512CD AVX512DQ AVX512VL && sets+=(AVX-512)
  $1 AVX512BF16 && sets+=(AVX512-BF16)
  echo "${sets[*]}"
}
read -ra built <<<"$(sets_with has_macros)"
read -ra cpu <<<"$(sets_with has_flags)"
expect_in "$version" ", $build) for $(describe_sets "${built[@]}")" \
  "--version names the instruction sets it was built for: $(describe_sets "${built[@]}")"
expect_in "$version" "this CPU has $(describe_sets "${cpu[@]}")" "--version names this CPU's: $(describe_sets "${cpu[@]}")"

# The own kernels' target (Highway's runtime dispatch): the best this CPU has, as /proc/cpuinfo
# says, unless TINYFORMER_ISA asks for a lower one; a name it cannot take is one line, exit 2.
best=sse4
has_flags AVX2 FMA && best=avx2
has_flags AVX512F AVX512BW AVX512DQ AVX512VL && best=avx512
kernels_line=$(grep '^own kernels' <<<"$version")
kernel_target=$(sed -n 's/^own kernels (Highway) on \([a-z0-9_]*\),.*/\1/p' <<<"$version")
if [[ $kernels_line == "own kernels (Highway) on $best,"* || $kernels_line == "own kernels (Highway) on avx512_"* ]]; then
  pass "--version names the kernels' target, the best this CPU has: ${kernels_line#own kernels (Highway) on }"
else
  fail "--version's kernel line '$kernels_line', expected the target $best"
fi
forced=$(TINYFORMER_ISA=sse4 "$tf" --version | grep '^own kernels')
expect_in "$forced" "on sse4," "TINYFORMER_ISA=sse4 runs the kernels on sse4"
expect_exit 2 "TINYFORMER_ISA naming no target" -- env TINYFORMER_ISA=avx3000 "$tf" --version
one_line "TINYFORMER_ISA naming no target"
expect_in "$err" "TINYFORMER_ISA: kernel target 'avx3000': expected one of" "names the variable, the word and the choices"
if ! has_flags AVX512F; then
  expect_exit 2 "TINYFORMER_ISA naming a target this CPU lacks" -- env TINYFORMER_ISA=avx512 "$tf" --version
  expect_in "$err" "this CPU cannot run it" "says the CPU cannot run it"
fi
else
  # 64-bit Arm: the sets are aarch64's (NEON, SVE, SVE2), the kernels run on neon or better.
  expect_in "$version" "this CPU has aarch64 (NEON" "--version names this CPU's sets: aarch64 (NEON ...)"
  expect_in "$version" "own kernels (Highway) on " "--version names the kernels' target"
  kernel_target=$(sed -n 's/^own kernels (Highway) on \([a-z0-9_]*\),.*/\1/p' <<<"$version")
  cpu=()
  describe_sets() { sed -n 's/^this CPU has \(aarch64 ([^)]*)\).*/\1/p' <<<"$version"; }  # as --version says
  forced=$(TINYFORMER_ISA=neon "$tf" --version | grep '^own kernels')
  expect_in "$forced" "on neon," "TINYFORMER_ISA=neon runs the kernels on neon"
  expect_exit 2 "TINYFORMER_ISA naming no target" -- env TINYFORMER_ISA=avx3000 "$tf" --version
  one_line "TINYFORMER_ISA naming no target"
  expect_in "$err" "TINYFORMER_ISA: kernel target 'avx3000': expected one of" "names the variable, the word and the choices"
fi

# A run says what made it: summary.json and the checkpoint's metadata carry the same.
tiny_lesson_config "$scratch/tiny.toml" "steps = 2" "batch_size = 4"
if "$tf" train --config "$scratch/tiny.toml" --out "$scratch/run" >/dev/null 2>&1; then
  made_by=$(tr -d ' \n' <"$scratch/run/summary.json" | grep -o '"made_by":{[^}]*}')
  expect_in "$made_by" "\"version\":\"$project_version\"" "summary.json's made_by has the version"
  [[ -n "${commit:-}" ]] && expect_in "$made_by" "\"git\":\"$commit" "summary.json's made_by has the commit"
  expect_in "$made_by" "\"onednn\":\"$dnnl_header\"" "summary.json's made_by has oneDNN's version"
  expect_in "$made_by" "\"kernels\":\"$kernel_target\"" "summary.json's made_by has the kernels' target, $kernel_target"
  expect_in "$made_by" "\"license\":\"$spdx\"" "summary.json's made_by has the licence"
  expect_in "$made_by" "\"cpu\":\"$(describe_sets "${cpu[@]}" | tr -d ' ')\"" "summary.json's made_by has this CPU's instruction sets"
  # safetensors: 8 bytes of header length (little-endian), then the JSON header with __metadata__.
  header_length=$(od -An -t u8 -N 8 "$scratch/run/model.safetensors" | tr -d ' ')
  header=$(tail -c +9 "$scratch/run/model.safetensors" | head -c "$header_length")
  expect_in "$header" '"made_by":"{\"build\"' "the checkpoint's __metadata__ has made_by"
  expect_in "$header" "\\\"version\\\":\\\"$project_version\\\"" "... with the version"
else
  fail "training the tiny model"
fi

# --- unknown subcommands and options ---------------------------------------------------------
expect_exit 2 "a misspelt subcommand" -- "$tf" sampel --checkpoint x
one_line "a misspelt subcommand"
expect_in "$err" "unknown subcommand \`sampel\`" "names the word typed"
expect_in "$err" "did you mean \`sample\`?" "suggests the nearest subcommand"
expect_exit 2 "a word that is no subcommand at all" -- "$tf" fly
expect_in "$err" "unknown subcommand \`fly\`, expected one of: train, sample" "lists the subcommands, no wild guess"
expect_exit 2 "no subcommand" -- "$tf"
expect_in "$err" "a subcommand is required" "says a subcommand is required"
expect_exit 2 "an option before the subcommand" -- "$tf" --verison
expect_in "$err" "did you mean \`--version\`?" "suggests --version"
expect_exit 2 "a config key given as an option" -- "$tf" train --config x.toml --stpes 5
expect_in "$err" "did you mean \`--set train.steps=...\`?" "suggests --set train.steps"
expect_exit 2 "a stray word" -- "$tf" sample --checkpoint x 1.0
expect_in "$err" "unexpected argument \`1.0\`" "names the stray word"

# Every subcommand, with each of its own long options misspelt (two letters swapped): one
# line, exit 2, the misspelling named and the option suggested.
subcommands=$("$tf" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && /^  [a-z]/ {print $1}')
[[ $(wc -w <<<"$subcommands") -ge 10 ]] && pass "--help lists $(wc -w <<<"$subcommands") subcommands" \
  || fail "--help lists too few subcommands: $subcommands"
checked=0
for sub in $subcommands; do
  options=$("$tf" "$sub" --help | grep -o -- '--[a-z][a-z-]*' | sort -u | grep -v -- '--help')
  for option in $options; do
    name=${option#--}
    [[ ${#name} -ge 4 ]] || continue
    typo="--${name:0:1}${name:2:1}${name:1:1}${name:3}"  # --steps → --tseps
    [[ "$typo" == "$option" ]] && continue
    # A typo that is another real option is no typo (none today, but keep the check honest).
    grep -qx -- "$typo" <<<"$options" && continue
    err=$("$tf" "$sub" "$typo" 2>&1 >/dev/null); code=$?
    if [[ $code -eq 2 && $(printf '%s' "$err" | wc -l) -le 1 && "$err" == *"$sub: unknown option \`$typo\`"* \
          && "$err" == *"did you mean \`$option\`?"* ]]; then
      checked=$((checked + 1))
    else
      fail "$sub $typo: exit $code, expected 2 with one line naming it and suggesting $option: $err"
    fi
  done
done
[[ $checked -ge 50 ]] && pass "$checked misspelt options over every subcommand: one line each, named, nearest suggested" \
  || fail "only $checked misspelt options checked"

finish
