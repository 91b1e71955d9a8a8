#!/usr/bin/python3
"""A flood of requests at a running explorer, and whether its page stays usable meanwhile.

    scripts/flood_explorer.py http://127.0.0.1:PORT [--requests 400] [--within 1.0]

One client opens `--requests` connections at once (one thread each, from 127.0.0.2; half
POST /api/run with a head knocked out, half POST /api/sample of 300 characters), while another client (a process of its own, from 127.0.0.1) loads the page
as a browser does:
GET /, GET /api/model, POST /api/run. It passes (exit 0) when each of the second client's
requests is answered 200 and all three within `--within` seconds, and when every answer to
the flood is 200 or 503 with a Retry-After header. It prints the second client's times and
the flood's statuses.

Bounded: loopback addresses only (it refuses any other URL), at most 1,000 connections,
every socket with a 20 s timeout, and the whole run stops after 60 s.
"""
import argparse
import http.client
import json
import subprocess
import sys
import threading
import time
import urllib.parse

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("url", help="the explorer, http://127.0.0.1:PORT")
parser.add_argument("--requests", type=int, default=400, help="the flood's connections (at most 1000)")
parser.add_argument("--within", type=float, default=1.0, help="seconds the page's three requests may take")
parser.add_argument("--page", action="store_true", help=argparse.SUPPRESS)  # the second client, run apart
args = parser.parse_args()

url = urllib.parse.urlsplit(args.url)
if url.scheme != "http" or url.hostname not in ("127.0.0.1", "localhost") or not url.port:
    sys.exit("flood_explorer: expected http://127.0.0.1:PORT (loopback only)")
if not 1 <= args.requests <= 1000:
    sys.exit("flood_explorer: --requests: expected 1..1000")
HOST, PORT = "127.0.0.1", url.port
TEXT = "小丁拿着红色的苹果。谁拿着苹果？小丁。苹果是什么颜色？"


def request(method, path, body=None, source="127.0.0.1"):
    """(status, Retry-After header or None, seconds) of one request on its own connection."""
    start = time.perf_counter()
    connection = http.client.HTTPConnection(HOST, PORT, timeout=20, source_address=(source, 0))
    try:
        headers = {"Host": f"127.0.0.1:{PORT}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        connection.request(method, path, body=None if body is None else json.dumps(body).encode(), headers=headers)
        reply = connection.getresponse()
        reply.read()
        return reply.status, reply.getheader("Retry-After"), time.perf_counter() - start
    except OSError as error:
        return f"error: {error}", None, time.perf_counter() - start
    finally:
        connection.close()


PAGE = [("GET", "/", None), ("GET", "/api/model", None), ("POST", "/api/run", {"text": TEXT})]
if args.page:  # the second client: a process of its own, so that the flood's threads do not slow it
    start = time.perf_counter()
    rows = [[method, path, *request(method, path, body)] for method, path, body in PAGE]
    print(json.dumps({"rows": rows, "seconds": time.perf_counter() - start}))
    sys.exit(0)

flood_results = []
lock = threading.Lock()
release = threading.Event()


def flood_one(i):
    release.wait(20)
    if i % 2:  # a forward pass with a head knocked out, or a 300-character sample
        result = request("POST", "/api/run", {"text": TEXT, "ablate": ["L0H0"]}, source="127.0.0.2")
    else:
        result = request("POST", "/api/sample", {"prompt": "小丁", "max_new": 300, "seed": i}, source="127.0.0.2")
    with lock:
        flood_results.append(result)


threads = [threading.Thread(target=flood_one, args=(i,), daemon=True) for i in range(args.requests)]
for thread in threads:
    thread.start()
release.set()  # all at once
time.sleep(0.05)  # the flood is under way

measured = json.loads(subprocess.run([sys.executable, __file__, args.url, "--page"], capture_output=True, text=True,
                                     timeout=60, check=True).stdout)
page = [tuple(row) for row in measured["rows"]]
page_seconds = measured["seconds"]

deadline = time.monotonic() + 60
for thread in threads:
    thread.join(max(0.0, deadline - time.monotonic()))

counts = {}
for status, retry_after, _ in flood_results:
    key = f"{status}" + (" with Retry-After" if status == 503 and retry_after else "")
    counts[key] = counts.get(key, 0) + 1
flood_seconds = max((seconds for _, _, seconds in flood_results), default=0.0)
print(f"flood: {args.requests} POSTs to /api/run and /api/sample at once from 127.0.0.2: "
      + ", ".join(f"{n} × {key}" for key, n in sorted(counts.items())) + f"; the last answered after {flood_seconds:.2f} s")
for method, path, status, _, seconds in page:
    print(f"meanwhile from 127.0.0.1: {method} {path} {status} in {seconds * 1000:.0f} ms")
print(f"the page's three requests: {page_seconds * 1000:.0f} ms (limit {args.within * 1000:.0f} ms)")

problems = []
if len(flood_results) != args.requests:
    problems.append(f"{args.requests - len(flood_results)} flood requests unanswered after 60 s")
bad = {key: n for key, n in counts.items() if key not in ("200", "503 with Retry-After")}
if bad:
    problems.append(f"flood answers other than 200 or 503 with Retry-After: {bad}")
if any(status != 200 for _, _, status, _, _ in page):
    problems.append("the page's requests: " + ", ".join(f"{m} {p} {s}" for m, p, s, _, _ in page))
if page_seconds > args.within:
    problems.append(f"the page took {page_seconds:.2f} s, over {args.within} s")
for problem in problems:
    print(f"flood_explorer: FAIL: {problem}")
sys.exit(1 if problems else 0)
