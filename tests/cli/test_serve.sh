#!/usr/bin/env bash
# tinyformer serve as a browser and its users meet it: every malformed request answered with
# its status and a JSON error (and the server still up after them), /api/sample equal to
# `tinyformer sample`, a load test (500 requests to /api/run from 16 clients at once, every
# answer byte-identical to the same request's answer alone; its rate and the server's peak
# RSS printed), bounded work (a flood of 400 leaves the page usable; a stalled body is cut
# off), the access checks (Host, Origin, Content-Type, the token; access.hpp) and the
# page policy headers, each case and its negative, a busy port, and a clean exit on SIGINT and
# SIGTERM.
source "$(dirname "$0")/common.sh"
command -v curl >/dev/null || { fail "curl is missing (Debian package curl; scripts/install-deps.sh installs it)"; finish; }
"$tf" train --config "$src/tests/data/tiny.toml" --out "$scratch/run" >/dev/null 2>&1 || fail "training the tiny model"

pid=""
# start_server NAME ARGS...: starts `serve` in the background, waits for its address (in $url).
start_server() {
  local name=$1; shift
  "$tf" serve --checkpoint "$scratch/run" "$@" >"$scratch/$name.out" 2>"$scratch/$name.err" &
  pid=$!
  url=""
  for _ in $(seq 300); do
    url=$(grep -oE 'http://[^ ]+:[0-9]+' "$scratch/$name.out" 2>/dev/null | head -1)
    [[ -n $url ]] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  fail "serve did not start: $(cat "$scratch/$name.err")"
  finish
}
# stop_server SIGNAL: sends it, expects exit 0 within 5 s and "stopped".
stop_server() {
  local signal=$1 name=$2 code
  kill -"$signal" "$pid"
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then fail "serve still running 5 s after SIG$signal"; kill -9 "$pid"; return; fi
  wait "$pid"; code=$?
  [[ $code -eq 0 ]] && pass "SIG$signal: the server exits 0" || fail "SIG$signal: exit $code; $(tail -2 "$scratch/$name.err")"
  expect_in "$(cat "$scratch/$name.out")" "stopped" "SIG$signal: the server says it stopped"
}
# call METHOD PATH [BODY]: the status in $status, the reply in $reply.
call() {
  local args=(-s -o "$scratch/reply" -w '%{http_code}' -X "$1")
  [[ $# -ge 3 ]] && args+=(--data-binary "$3" -H 'Content-Type: application/json')
  status=$(curl "${args[@]}" "$url$2")
  reply=$(cat "$scratch/reply")
}
# expect_error STATUS NEEDLE DESCRIPTION METHOD PATH [BODY]
expect_error() {
  local want=$1 needle=$2 what=$3; shift 3
  call "$@"
  if [[ $status == "$want" && $reply == '{"error":"'* && $reply == *'}' && $reply == *"$needle"* ]]; then
    pass "$what: $status, $(head -c 150 <<<"$reply")"
  else
    fail "$what: status $status (expected $want), reply $reply (expected a JSON error with: $needle)"
  fi
}

# 17 computing at once: 16 from one client (the load test below), one kept for another client.
start_server main --port 0 --threads 17
pass "serve listens at $url"
call GET /api/model
[[ $status == 200 ]] && pass "GET /api/model: 200" || fail "GET /api/model: $status $reply"
expect_in "$reply" '"n_heads":2' "/api/model gives the model's shape"
expect_in "$reply" '"vocabulary":["\n"' "/api/model gives the vocabulary"
expect_in "$reply" '"probes":[{"answer":' "/api/model lists the probes with the model's answers"
call GET /
[[ $status == 200 && $reply == *"<html"* ]] && pass "GET /: the page" || fail "GET /: $status"

# Every malformed request: its status and a JSON error naming what is wrong.
expect_error 400 "not JSON at byte" "a body that is not JSON" POST /api/run '{"text": "小'
expect_error 400 "expected a JSON object" "a JSON array" POST /api/run '["小"]'
expect_error 400 'unknown field \"colour\"' "an unknown field" POST /api/run '{"text":"小","colour":"红"}'
expect_error 400 "text: missing" "no text" POST /api/run '{}'
expect_error 400 "text: expected a string" "a number for text" POST /api/run '{"text":5}'
expect_error 400 "text: empty" "an empty text" POST /api/run '{"text":""}'
expect_error 400 "character 'Z' (U+005A) at character 2 is not in the model's" "a character outside the vocabulary" \
  POST /api/run '{"text":"小丁Z拿€"}'
expect_in "$reply" '"unknown":[{"character":"Z"' "the error lists the unknown characters"
expect_in "$reply" '"position":4' "... each with its position (€ at 4)"
expect_error 400 "not JSON" "bytes that are not UTF-8" POST /api/run $'{"text":"\xff\xfe"}'
expect_error 400 '\"L7H0\" is not in this model' "a head the model does not have" POST /api/run '{"text":"小","ablate":["L7H0"]}'
expect_error 400 "ablate: expected an array" "ablate not a list" POST /api/run '{"text":"小","ablate":"L0H0"}'
expect_error 400 'expected a head such as' "a malformed head" POST /api/run '{"text":"小","ablate":["head 1"]}'
expect_error 400 'expected \"zero\" or \"mean\"' "an unknown ablation" POST /api/run '{"text":"小","ablation":"half"}'
expect_error 400 "max_new: 2001, expected an integer 1..2000" "max_new out of range" POST /api/sample '{"prompt":"小","max_new":2001}'
expect_error 400 "max_new: 0" "max_new 0" POST /api/sample '{"prompt":"小","max_new":0}'
expect_error 400 "max_new: 2.5" "a fractional max_new" POST /api/sample '{"prompt":"小","max_new":2.5}'
expect_error 400 "temperature: -1, expected a number >= 0" "a negative temperature" POST /api/sample '{"prompt":"小","temperature":-1}'
expect_error 400 "top_k: 80, expected an integer 0..79" "top_k over the vocabulary" POST /api/sample '{"prompt":"小","top_k":80}'
expect_error 400 "top_p: 0, expected a number in (0, 1]" "top_p 0" POST /api/sample '{"prompt":"小","top_p":0}'
expect_error 400 "seed: -1" "a negative seed" POST /api/sample '{"prompt":"小","seed":-1}'
expect_error 400 "prompt: missing" "no prompt" POST /api/sample '{"max_new":5}'
expect_error 400 "prompt: character 'Q'" "a prompt outside the vocabulary" POST /api/sample '{"prompt":"Q"}'
expect_error 404 "not found" "an unknown path" GET /api/nothing
expect_error 404 "not found" "a path outside the site" GET /../../etc/passwd
expect_error 405 "method not allowed, expected POST" "GET /api/run" GET /api/run
expect_error 405 "expected POST" "DELETE /api/run" DELETE /api/run
expect_error 405 "expected GET" "POST /api/model" POST /api/model '{}'
allow=$(curl -s -D - -o /dev/null -X PUT -d '{}' "$url/api/sample" | tr -d '\r' | grep -i '^allow:')
[[ $allow == "Allow: POST" || $allow == "allow: POST" ]] && pass "405 says Allow: POST" || fail "405 Allow header: '$allow'"
head -c 70000 /dev/zero | tr '\0' 'a' >"$scratch/big"
expect_error 413 "over 65536 bytes" "a body over 64 KiB" POST /api/run "@$scratch/big"

# Longer than the context (16 for this model): its last 16 characters, and a note.
call POST /api/run '{"text":"小丁拿着红色的苹果。谁拿着苹果？小丁。苹果是"}'
[[ $status == 200 ]] && pass "a text longer than the context: 200" || fail "long text: $status $reply"
expect_in "$reply" '"dropped":6' "... the first 6 of its 22 characters dropped"
expect_in "$reply" 'ran on its last 16 (the model' "... and a note says so"

# The server is still up and answers correctly after every bad request.
call POST /api/run '{"text":"小丁拿着红色的苹果。","ablate":["L0H1"]}'
[[ $status == 200 && $reply == *'"ablated":{"ablation":"zero"'* ]] && pass "after the bad requests: a run with an ablation" \
  || fail "after the bad requests: $status $(head -c 200 <<<"$reply")"

# /api/sample gives exactly what `tinyformer sample` prints.
call POST /api/sample '{"prompt":"小丁","max_new":60,"temperature":0.8,"top_k":10,"top_p":0.95,"seed":5}'
api_text=$(sed -n 's/.*"text":"\([^"]*\)".*/\1/p' <<<"$reply" | sed 's/\\n/\n/g')
cli_text=$("$tf" sample --checkpoint "$scratch/run" --prompt 小丁 --max-new 60 --temperature 0.8 --top-k 10 --top-p 0.95 --seed 5 2>/dev/null)
[[ -n $api_text && "$api_text" == "$cli_text" ]] && pass "/api/sample equals tinyformer sample (seed 5)" \
  || fail "/api/sample: '$api_text' but sample printed '$cli_text'"

# Load: 500 requests to /api/run from 16 clients at once, four different texts; every answer
# must be byte-identical to the same request answered alone.
mkdir -p "$scratch/load"
texts=("小丁拿着红色的苹果。谁拿着苹果？" "阿平看着绿色的球。球是什么颜色？" "小华丢了白色的灯。" "谁拿着苹果？")
for k in 0 1 2 3; do
  printf '{"text":"%s","ablate":["L0H%d"]}' "${texts[$k]}" $((k % 2)) >"$scratch/load/body$k"
  curl -s -o "$scratch/load/expected$k" -X POST -H 'Content-Type: application/json' --data-binary "@$scratch/load/body$k" "$url/api/run"
done
start=$EPOCHREALTIME
seq 0 499 | xargs -P 16 -I{} sh -c 'k=$(({} % 4)); curl -s -o "$1/load/got{}" -w "%{http_code}\n" -X POST -H "Content-Type: application/json" --data-binary "@$1/load/body$k" "$2/api/run"' _ "$scratch" "$url" >"$scratch/load/codes"
elapsed=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
ok=$(grep -c '^200$' "$scratch/load/codes")
same=0
for i in $(seq 0 499); do cmp -s "$scratch/load/got$i" "$scratch/load/expected$((i % 4))" && same=$((same + 1)); done
[[ $ok -eq 500 ]] && pass "load: 500 of 500 answered 200" || fail "load: $ok of 500 answered 200 ($(sort "$scratch/load/codes" | uniq -c | tr '\n' ' '))"
[[ $same -eq 500 ]] && pass "load: all 500 answers identical to the same request alone" || fail "load: $same of 500 answers right"
kill -0 "$pid" 2>/dev/null && pass "load: the server is still up" || fail "load: the server died"
peak_kb=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
echo "load: 500 requests from 16 clients in ${elapsed} s; the server's peak RSS $((peak_kb / 1024)) MiB"
[[ $peak_kb -lt 1048576 ]] && pass "load: peak RSS $((peak_kb / 1024)) MiB, under 1 GiB" || fail "load: peak RSS $((peak_kb / 1024)) MiB"
stop_server INT main

# Bounded work: at most --threads heavy requests computed at once, one fewer from one client;
# the next gets 503 and Retry-After at once. A flood of 400 from 127.0.0.2 leaves the page
# usable from 127.0.0.1 within 1 s (scripts/flood_explorer.py: loopback only, bounded).
start_server busy --port 0 --threads 4
if python3 "$src/scripts/flood_explorer.py" "$url" --requests 400 --within 1.0 >"$scratch/flood.out" 2>&1; then
  pass "a flood of 400: $(grep -E '^(flood|the page)' "$scratch/flood.out" | tr '\n' ' ')"
else
  fail "a flood of 400: $(tr '\n' ' ' <"$scratch/flood.out")"
fi
grep -q ' × 503 with Retry-After' "$scratch/flood.out" && pass "... the flood beyond the workers got 503 with Retry-After" \
  || fail "the flood got no 503: $(head -1 "$scratch/flood.out")"
kill -0 "$pid" 2>/dev/null && pass "... and the server is still up" || fail "the flood killed the server"
# A client that stops sending its body holds a connection for the read timeout (2 s), then is cut off.
port=${url##*:}
start=$EPOCHREALTIME
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'POST /api/run HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"te' "$port" >&3
status=$(curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data '{"text":"小丁"}' "$url/api/run")
[[ $status == 200 ]] && pass "while a body stalls, another request: 200" || fail "while a body stalls: $status"
timeout 10 cat <&3 >/dev/null
exec 3<&-
waited=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
awk -v w="$waited" 'BEGIN { exit !(w >= 1.5 && w < 5) }' && pass "a stalled body is cut off after ${waited} s (read timeout 2 s)" \
  || fail "a stalled body was cut off after ${waited} s, expected about 2"
stop_server INT busy

# Who may use it (access.hpp): a page the user visits must not reach the server under another
# name (DNS rebinding) or POST to it from another site. Each case, and its negative.
start_server guarded --port 0 --allow-host explorer.test
port=${url##*:}
# hcall HOST [CURL ARGS...] PATH: a request with that Host header; status in $status, reply in $reply.
hcall() {
  local host=$1; shift
  status=$(curl -s -o "$scratch/reply" -w '%{http_code}' -H "Host: $host" "$@")
  reply=$(cat "$scratch/reply")
}
expect_refused() {  # expect_refused NEEDLE DESCRIPTION
  if [[ $status == 403 && $reply == '{"error":"'* && $reply == *"$1"* ]]; then pass "$2: 403, $(head -c 120 <<<"$reply")"
  else fail "$2: status $status, reply $(head -c 200 <<<"$reply") (expected 403 with: $1)"; fi
}
hcall "evil.example:$port" "$url/api/model"
expect_refused 'Host \"evil.example:'"$port"'\" is not this server' "GET /api/model with Host evil.example (DNS rebinding)"
hcall evil.example -H 'Origin: http://evil.example' -H 'Content-Type: text/plain' --data '{"text":"小丁拿着红色的苹果。"}' "$url/api/run"
expect_refused 'is not this server' "the issue's cross-site text/plain POST under a rebound name"
hcall "evil.example:$port" "$url/"
expect_refused 'is not this server' "the page itself under a rebound name"
hcall "localhost:$((port + 1))" "$url/api/model"
expect_refused 'is not this server' "the right name with another port"
status=$(curl -s -o "$scratch/reply" -w '%{http_code}' -H 'Host:' "$url/api/model"); reply=$(cat "$scratch/reply")
expect_refused 'no Host header' "a request without a Host header"
for host in "localhost:$port" "127.0.0.1:$port" "[::1]:$port" "LocalHost:$port" "explorer.test:$port"; do
  hcall "$host" "$url/api/model"
  [[ $status == 200 ]] && pass "Host $host: 200" || fail "Host $host: $status $(head -c 150 <<<"$reply")"
done
hcall "127.0.0.1:$port" -H 'Origin: http://evil.example' -H 'Content-Type: application/json' --data '{"text":"小丁"}' "$url/api/run"
expect_refused 'Origin \"http://evil.example\" is not this server' "a JSON POST from another site's page"
hcall "127.0.0.1:$port" -H 'Origin: null' -H 'Content-Type: application/json' --data '{"text":"小丁"}' "$url/api/run"
expect_refused 'Origin \"null\"' "a POST from an opaque origin (a sandboxed frame, a file)"
hcall "127.0.0.1:$port" -H 'Content-Type: text/plain' --data '{"text":"小丁"}' "$url/api/run"
expect_refused 'expected application/json' "a text/plain POST (a cross-site form or fetch sends one without asking)"
hcall "127.0.0.1:$port" --data '{"prompt":"小丁"}' "$url/api/sample"
expect_refused 'expected application/json' "a form-encoded POST to /api/sample"
hcall "127.0.0.1:$port" -H "Origin: http://127.0.0.1:$port" -H 'Content-Type: application/json; charset=utf-8' --data '{"text":"小丁"}' "$url/api/run"
[[ $status == 200 ]] && pass "a POST from the page's own origin: 200" || fail "own-origin POST: $status $(head -c 150 <<<"$reply")"
hcall "localhost:$port" -H 'Content-Type: application/json' --data '{"prompt":"小丁","max_new":3}' "$url/api/sample"
[[ $status == 200 ]] && pass "a JSON POST without an Origin (curl, a script): 200" || fail "no-Origin POST: $status"
hcall "evil.example:$port" "$url/api/model"; hcall "evil.example:$port" "$url/api/model"
refusals=$(grep -c 'Host "evil.example' "$scratch/guarded.err")
[[ $refusals -eq 1 ]] && pass "the log says why, once for a name however often it comes" \
  || fail "the log has $refusals lines for evil.example: $(cat "$scratch/guarded.err")"
# The answers' headers: the page may load nothing from elsewhere, no site may frame it.
for path in / /api/model /api/nothing; do
  headers=$(curl -s -D - -o /dev/null "$url$path" | tr -d '\r')
  [[ $headers == *"Content-Security-Policy: default-src 'self'; script-src 'sha256-"* && $headers == *"frame-ancestors 'none'"* \
     && $headers == *"X-Frame-Options: DENY"* && $headers == *"Referrer-Policy: no-referrer"* ]] \
    && pass "GET $path: CSP (hashed scripts), frame-ancestors 'none', X-Frame-Options, Referrer-Policy" \
    || fail "GET $path: headers $headers"
done
headers=$(curl -s -D - -o /dev/null -H "Host: evil.example:$port" "$url/" | tr -d '\r')
[[ $headers == *"X-Frame-Options: DENY"* ]] && pass "... on a refusal too" || fail "a 403's headers: $headers"
[[ $(curl -s "$url/" | grep -c 'onsubmit=\|onclick=\|onload=') -eq 0 ]] && pass "the page has no inline event handlers (CSP runs none)" \
  || fail "the page has inline event handlers, which its CSP blocks"
stop_server INT guarded

# A token: asked for when --token is given (here, on loopback) and beyond loopback.
secret=0123456789abcdef-token
start_server token --port 0 --token "$secret"
port=${url##*:}
grep -q "http://127.0.0.1:$port/?token=$secret" "$scratch/token.out" && pass "the printed address carries the token" \
  || fail "the address: $(cat "$scratch/token.out")"
url="http://127.0.0.1:$port"
call GET /api/model
expect_refused 'no token' "no token"
status=$(curl -s -o "$scratch/reply" -w '%{http_code}' -H "Cookie: tinyformer_token=${secret}x" "$url/api/model"); reply=$(cat "$scratch/reply")
expect_refused 'wrong token' "a wrong token in the cookie"
first=$(curl -s -D - -o /dev/null "$url/?text=%E5%B0%8F&token=$secret&pos=1" | tr -d '\r')
[[ $first == "HTTP/1.1 303"* ]] && pass "the printed address: 303" || fail "the first load: $first"
expect_in "$first" "Set-Cookie: tinyformer_token=$secret; Path=/; HttpOnly; SameSite=Strict" "... setting an HttpOnly, SameSite=Strict cookie"
expect_in "$first" "Location: /?text=%E5%B0%8F&pos=1"$'\n' "... and sending the browser on without the token in its address"
for auth in "Cookie: tinyformer_token=$secret" "Authorization: token $secret"; do
  status=$(curl -s -o /dev/null -w '%{http_code}' -H "$auth" "$url/api/model")
  [[ $status == 200 ]] && pass "${auth%%:*} with the token: 200" || fail "${auth%%:*} with the token: $status"
done
stop_server TERM token

# Beyond loopback: a random token unless --no-token, which warns; a busy port: exit 1.
start_server open --host 0.0.0.0 --port 0
grep -qE 'http://0\.0\.0\.0:[0-9]+/\?token=[0-9a-f]{64} ' "$scratch/open.out" && pass "--host 0.0.0.0: a random 64-digit token in the address" \
  || fail "--host 0.0.0.0: $(cat "$scratch/open.out")"
port=$(grep -oE '0\.0\.0\.0:[0-9]+' "$scratch/open.out" | cut -d: -f2)
status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/api/model")
[[ $status == 403 ]] && pass "--host 0.0.0.0: a request without the token: 403" || fail "--host 0.0.0.0 without a token: $status"
expect_exit 1 "a port in use: exit 1" -- "$tf" serve --checkpoint "$scratch/run" --host 0.0.0.0 --port "$port"
expect_in "$err" "cannot listen on 0.0.0.0 port $port" "... with a message naming the port"
stop_server TERM open
start_server bare --host 0.0.0.0 --port 0 --no-token
expect_in "$(cat "$scratch/bare.err")" "without a token (--no-token): anyone who can reach this machine" "--no-token warns who can use it"
stop_server TERM bare
expect_exit 2 "--token and --no-token together: exit 2" -- "$tf" serve --checkpoint "$scratch/run" --token "$secret" --no-token
expect_exit 2 "a short --token: exit 2" -- "$tf" serve --checkpoint "$scratch/run" --token short
expect_in "$err" "expected at least 16 letters" "... saying what a token must be"

expect_exit 2 "a missing checkpoint: exit 2" -- "$tf" serve --checkpoint "$scratch/nothing"
expect_exit 2 "a port out of range: exit 2" -- "$tf" serve --checkpoint "$scratch/run" --port 70000
finish
