// Drives `tinyformer serve`'s explorer page in headless Chromium (Debian's /usr/bin/chromium,
// driven by puppeteer-core) the way a learner uses it, and fails unless every step holds:
//   1. the lesson's sentence typed into #text gives one map per head (L × H of /api/model);
//   2. the weight a hovered cell shows is the API's weight for that cell;
//   3. switching off the head that reads the name (the largest "who" activation-patching
//      fraction in inspect's circuits.json) lowers the shown probability of the answer's first
//      character, and the page's numbers are the API's;
//   4. a character outside the vocabulary is underlined and the reason shown;
//   5. the URL holds the state: the page opened from it shows the same text, heads and position;
//   6. /split-merge: it opens following the number 4 (outlined in the feature split at
//      position 1, head 0, feature 0, and #where gives its index at each step); the single-row
//      slider at a = 0.8 puts its point at [0.8, 0.4]; the x cell at b=0, t=1, i=0 lands in the
//      split at head 0, position 1, feature 0, holding 4; with #forget-transpose on, that cell
//      holds 2 (skipped on a 404);
//   7. no console error, no page error, no request outside the server's own origin (and data:);
//   8. screenshots in OUTDIR;
//   9. other sites (access.hpp): a page served from another loopback port cannot use it — its
//      no-cors text/plain POST to /api/run is answered 403, its JSON POST dies at the preflight,
//      its GET of /api/model cannot be read — and a name rebound to 127.0.0.1 (Chromium's
//      --host-resolver-rules, as DNS rebinding would) gets 403 for the page and the API;
// and the server, sent SIGINT, exits 0 within 5 s. Prints a line per step; on a failure, one
// line saying why, and exits 1 (2: usage, or the server or the browser would not start).
//
//   node check-explorer.js BINARY CHECKPOINT OUTDIR
// Environment: CHROMIUM (default /usr/bin/chromium); EXPLORER_HTML=FILE and SPLIT_MERGE_HTML=FILE
// serve FILE as the page at / or /split-merge instead of the one compiled into BINARY (to try an
// edited page without a rebuild, and to show that a broken page fails the check). The server runs in the current directory: the
// run's config names its corpus and probes relative to the directory it was trained from.
"use strict";

const fs = require("fs");
const os = require("os");
const path = require("path");
const { spawn, execFileSync } = require("child_process");
const puppeteer = require("puppeteer-core");
const { launchChromium } = require("../lib/headless-chromium.js");

const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const SENTENCE = "小丁拿着红色的苹果。谁拿着苹果？";  // who holds the apple? → 小丁
const ANSWER_START = "小";                          // the answer's first character
const UNKNOWN_SENTENCE = "小丁拿着Z色的苹果";          // Z is not in the lesson's vocabulary
const UNKNOWN_CHAR = "Z";

class Failure extends Error {}
function check(condition, why) {
  if (!condition) throw new Failure(why);
}

// ---- The server -----------------------------------------------------------------------------

// Starts `BINARY serve --port 0` and resolves to {child, origin} once it prints its address.
function startServer(binary, checkpoint) {
  const child = spawn(binary, ["serve", "--checkpoint", checkpoint, "--port", "0"], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "", stderr = "";
  child.stderr.on("data", (chunk) => { stderr += chunk; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the server printed no address within 60 s")), 60000);
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      const found = stdout.match(/http:\/\/127\.0\.0\.1:(\d+)\//);
      if (found) {
        clearTimeout(timer);
        resolve({ child, origin: `http://127.0.0.1:${found[1]}`, notes: () => stderr });
      }
    });
    child.on("error", (error) => { clearTimeout(timer); reject(error); });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code}) before printing its address: ${stderr.trim().split("\n").pop()}`));
    });
  });
}

// Sends SIGINT; resolves to the exit code, or null if it did not exit within `ms`.
function stopServer(child, ms) {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), ms);
    child.once("exit", (code, signal) => { clearTimeout(timer); resolve(code === null ? `signal ${signal}` : code); });
    child.kill("SIGINT");
  });
}

async function api(origin, route, body) {
  // A POST must say it is JSON: the server refuses any other body (access.hpp).
  const reply = await fetch(origin + route, body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  return { status: reply.status, json: await reply.json() };
}

// ---- The head that reads the name -----------------------------------------------------------

// From inspect's circuits.json: the head whose clean output, patched into the corrupted story,
// recovers the most of the "who" answer. CHECKPOINT/inspect/circuits.json is used if it is
// there; else `BINARY inspect --probes` writes one into a temporary directory.
function nameReader(binary, checkpoint, model) {
  const runDir = fs.statSync(checkpoint).isDirectory() ? checkpoint : path.dirname(checkpoint);
  let file = path.join(runDir, "inspect", "circuits.json");
  if (!fs.existsSync(file)) {
    const probes = model.config.data.probes_path;
    check(probes && fs.existsSync(probes),
          `no ${file}, and the run's probes ${JSON.stringify(probes)} are not found`);
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "check-explorer-inspect-"));
    execFileSync(binary, ["inspect", "--checkpoint", checkpoint, "--probes", probes, "--out", out], { stdio: "ignore" });
    file = path.join(out, "circuits.json");
  }
  const patching = JSON.parse(fs.readFileSync(file, "utf8")).patching;
  check(patching, `${file} has no "patching" (inspect ran without probes?)`);
  const who = patching.kinds.find((kind) => kind.kind === "who");
  check(who, `${file}: no "who" kind in patching`);
  const fractions = who.recovered_every_position;
  const best = fractions.indexOf(Math.max(...fractions));
  return { head: patching.heads[best], fraction: fractions[best], file };
}

// ---- Reading the page -----------------------------------------------------------------------

// The significant digits of a number as written ("0.008123" → 4, "0.9924" → 4).
function significantDigits(written) {
  const mantissa = written.replace(/e.*$/i, "").replace(/[-+.]/g, "").replace(/^0+/, "");
  return Math.max(1, mantissa.length);
}

// Moves the mouse onto cell (row, col) of a head's map and returns the tooltip.
async function hoverCell(page, head, row, col) {
  const canvas = await page.$(`.head-map[data-head="${head}"] canvas.map`);
  check(canvas, `no canvas in .head-map[data-head="${head}"]`);
  await canvas.evaluate((element) => element.scrollIntoView({ block: "center" }));
  const where = await canvas.evaluate((element) => {
    const box = element.getBoundingClientRect();
    return { left: box.left, top: box.top, ...element.dataset };
  });
  const cell = Number(where.cell);
  await page.mouse.move(where.left + Number(where.x0) + (col + 0.5) * cell, where.top + Number(where.y0) + (row + 0.5) * cell);
  return page.$eval("#tooltip", (tip) => ({
    visible: getComputedStyle(tip).display !== "none", text: tip.textContent, ...tip.dataset,
  }));
}

async function typeInto(page, selector, text) {
  await page.click(selector, { clickCount: 3 });
  await page.keyboard.press("Backspace");
  await page.type(selector, text, { delay: 5 });
}

// Waits until `condition(arg)` holds in the page; fails with `why` after 15 s.
async function waitFor(page, why, condition, arg) {
  try {
    await page.waitForFunction(condition, { timeout: 15000 }, arg);
  } catch (error) {
    throw new Failure(`${why} (waited 15 s)`);
  }
}

// Waits until the maps drawn are those of `text`.
const waitForRun = (page, step, text) => waitFor(page, `${step}: the maps of ${text} were not drawn`,
  (t) => document.querySelector("#heads").dataset.text === t && document.querySelector("#run-error").textContent === "", text);

// ---- The steps ------------------------------------------------------------------------------

async function steps(browser, origin, binary, checkpoint, outdir, faults) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const allowed = (url) => url.startsWith(origin + "/") || url.startsWith("data:");
  const runRequests = [];  // the bodies the page posted to /api/run
  // Pages served from files instead of the binary (see the top of this file).
  const pageFiles = { "/": process.env.EXPLORER_HTML, "/split-merge": process.env.SPLIT_MERGE_HTML };
  await page.setRequestInterception(true);
  page.on("request", (request) => {
    const url = request.url();
    if (!allowed(url)) {
      faults.push(`the page requested ${url} (only ${origin} and data: are allowed)`);
      return request.abort();
    }
    if (url.startsWith(origin + "/api/run")) runRequests.push(JSON.parse(request.postData() || "{}"));
    const file = url.startsWith("data:") ? undefined : pageFiles[new URL(url).pathname];
    if (file) return request.respond({ status: 200, contentType: "text/html; charset=utf-8", body: fs.readFileSync(file) });
    return request.continue();
  });
  // Chromium logs a fetch answered 400 as a console error; step 4 expects exactly that one.
  let expect400 = false;
  page.on("console", (message) => {
    if (message.type() !== "error") return;
    const from = (message.location() || {}).url || "";
    if (expect400 && from.startsWith(origin + "/api/run") && /status of 400/.test(message.text())) return;
    faults.push(`console error: ${message.text()}${from ? ` (${from})` : ""}`);
  });
  page.on("pageerror", (error) => faults.push(`page error: ${error.message}`));
  const noFaults = (step) => check(faults.length === 0, `${step}: ${faults[0]}`);

  const model = (await api(origin, "/api/model")).json;
  const L = model.model.n_layers, H = model.model.n_heads;

  // 1. The sentence, typed, gives L × H maps. The page opens on another text (the page's
  // default is the lesson's sentence itself), so that the maps drawn are the typed text's.
  await page.goto(origin + "/?text=" + encodeURIComponent("谁"), { waitUntil: "load" });
  await waitFor(page, "step 1: the page never became ready (body[data-ready])", () => document.body.dataset.ready);
  const before = runRequests.length;
  await typeInto(page, "#text", SENTENCE);
  await waitForRun(page, "step 1", SENTENCE);
  check(runRequests.slice(before).some((body) => body.text === SENTENCE),
        "step 1: typing the sentence sent no /api/run request for it");
  const intact = (await api(origin, "/api/run", { text: SENTENCE })).json;
  const T = intact.characters.length;
  const maps = await page.$$eval(".head-map", (figures) => figures.map((f) => ({
    head: f.dataset.head, size: Number((f.querySelector("canvas.map") || { dataset: {} }).dataset.size),
  })));
  check(maps.length === L * H, `step 1: ${maps.length} maps shown, expected ${L} layers × ${H} heads = ${L * H}`);
  for (let l = 0; l < L; ++l)
    for (let h = 0; h < H; ++h) {
      const map = maps.find((m) => m.head === `L${l}H${h}`);
      check(map, `step 1: no map for L${l}H${h}`);
      check(map.size === T, `step 1: L${l}H${h}'s map is ${map.size}×${map.size}, expected ${T}×${T}`);
    }
  noFaults("step 1");
  console.log(`step 1 ok: typed ${SENTENCE} (${T} characters); ${maps.length} maps (${L} layers × ${H} heads), each ${T}×${T}`);

  // 2. A hovered cell shows the API's weight: the last row, column 0, of the last head.
  const hovered = `L${L - 1}H${H - 1}`, row = T - 1, col = 0;
  const tip = await hoverCell(page, hovered, row, col);
  check(tip.visible, `step 2: hovering ${hovered} row ${row} column ${col} shows no #tooltip`);
  const shown = (tip.text.match(/:\s*([-+]?[0-9.]+(?:e[-+]?\d+)?)(?:\s|$)/i) || [])[1];
  check(shown, `step 2: the tooltip shows no weight: "${tip.text}"`);
  const expected = intact.attention[L - 1][H - 1][row][col];
  const digits = Math.max(4, significantDigits(shown));
  check(Number(shown) === Number(expected.toPrecision(digits)),
        `step 2: the tooltip shows ${shown}, the API's weight is ${expected} (${expected.toPrecision(digits)})`);
  check(significantDigits(shown) >= 4, `step 2: the tooltip shows ${shown}, fewer than 4 significant digits`);
  const where = `query ${intact.characters[row]} (pos ${row}) reads ${intact.characters[col]} (pos ${col})`;
  check(tip.text.includes(where), `step 2: the tooltip "${tip.text}" does not say "${where}"`);
  await page.screenshot({ path: path.join(outdir, "explorer-hover.png") });
  noFaults("step 2");
  console.log(`step 2 ok: ${hovered} "${tip.text}" = the API's ${expected}`);

  // 3. Switching off the name reader lowers the probability of the answer.
  const reader = nameReader(binary, checkpoint, model);
  await page.select("#ablation", "zero");
  await page.click(`#ablate-${reader.head}`);
  await waitFor(page, `step 3: after a click on #ablate-${reader.head}, #answer shows no probability with the head off ` +
                      "(data-p-ablated)",
                (head) => document.querySelector(`#ablate-${head}`).getAttribute("aria-pressed") === "true" &&
                          "pAblated" in document.querySelector("#answer").dataset, reader.head);
  check(runRequests.some((body) => body.text === SENTENCE && JSON.stringify(body.ablate) === JSON.stringify([reader.head]) &&
                                   (body.ablation || "zero") === "zero"),
        `step 3: the page sent no /api/run with ablate ["${reader.head}"], zero ablation`);
  const answer = await page.$eval("#answer", (a) => ({ ...a.dataset, text: a.innerText }));
  const ablated = (await api(origin, "/api/run", { text: SENTENCE, ablate: [reader.head], ablation: "zero" })).json;
  const pIntact = intact.top[T - 1].find((e) => e.char === ANSWER_START);
  const pAblated = ablated.ablated.top[T - 1].find((e) => e.char === ANSWER_START);
  check(pIntact, `step 3: ${ANSWER_START} is not among the API's likeliest next characters after ${SENTENCE}`);
  check(Number(answer.pos) === T - 1, `step 3: #answer is at position ${answer.pos}, expected the last, ${T - 1}`);
  check(answer.char === intact.top[T - 1][0].char,
        `step 3: #answer shows ${answer.char}, the API's likeliest next character is ${intact.top[T - 1][0].char}`);
  check(answer.char === ANSWER_START, `step 3: the model predicts ${answer.char}, expected ${ANSWER_START} (小丁 holds the apple)`);
  check(Number(answer.p) === pIntact.p, `step 3: #answer's data-p is ${answer.p}, the API's is ${pIntact.p}`);
  if (pAblated) {
    check(answer.pAblated !== "" && Number(answer.pAblated) === pAblated.p,
          `step 3: #answer's data-p-ablated is "${answer.pAblated}", the API's is ${pAblated.p}`);
    check(Number(answer.pAblated) < Number(answer.p),
          `step 3: with ${reader.head} off, p(${ANSWER_START}) = ${answer.pAblated}, not below ${answer.p}`);
  } else {
    check(answer.pAblated === "", `step 3: ${ANSWER_START} fell out of the ablated top list, yet data-p-ablated is "${answer.pAblated}"`);
  }
  // What the learner reads: both percentages, to the digits shown.
  const percents = (answer.text.match(/[0-9.]+%/g) || []).map((s) => s.slice(0, -1));
  check(percents.length >= 2, `step 3: #answer does not show two percentages: "${answer.text}"`);
  for (const [written, p] of [[percents[0], pIntact.p], [percents[1], pAblated ? pAblated.p : null]]) {
    if (p === null) continue;
    const decimals = (written.split(".")[1] || "").length;
    check(Number(written) === Number((100 * p).toFixed(decimals)), `step 3: #answer shows ${written}%, the API's is ${100 * p}%`);
  }
  const stateUrl = page.url();
  noFaults("step 3");
  console.log(`step 3 ok: ${reader.head} (who patching ${reader.fraction.toFixed(3)}, ${path.basename(reader.file)}) off: ` +
              `p(${ANSWER_START}) ${percents[0]}% → ${percents[1]}%, as the API says`);

  // The sample box gives what /api/sample gives for the same arguments.
  const sampleArgs = { prompt: "小丁拿着红色的苹果。", max_new: 24, temperature: 1, top_k: 0, top_p: 1, seed: 7 };
  await typeInto(page, "#sample-prompt", sampleArgs.prompt);
  for (const [id, value] of [["max-new", sampleArgs.max_new], ["temperature", 1], ["top-k", 0], ["top-p", 1], ["seed", sampleArgs.seed]])
    await page.$eval(`#sample-${id}`, (input, v) => { input.value = v; }, String(value));
  await page.click("#sample-run");
  const sampled = (await api(origin, "/api/sample", sampleArgs)).json;
  await waitFor(page, `sample: #sample-output does not show /api/sample's ${JSON.stringify(sampled.text)}`,
                (text) => document.querySelector("#sample-output").textContent === text, sampled.text);
  console.log(`sample ok: #sample-output ${JSON.stringify(sampled.text)} = /api/sample's (seed ${sampleArgs.seed})`);

  // The README's picture: the sentence, the name reader off, the cell it reads most at the
  // last position hovered. The window is made as tall as the page, so that the hovered cell is
  // in it and the picture shows the page unscrolled.
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  await page.setViewport({ width: 1280, height });
  const last = ablated.attention[L - 1][H - 1][row];
  await hoverCell(page, hovered, row, last.indexOf(Math.max(...last)));
  await page.screenshot({ path: path.join(outdir, "explorer.png"), fullPage: true });
  await page.setViewport({ width: 1280, height: 900 });

  // 4. A character outside the vocabulary is underlined and the reason shown.
  expect400 = true;
  await typeInto(page, "#text", UNKNOWN_SENTENCE);
  const refused = await api(origin, "/api/run", { text: UNKNOWN_SENTENCE });
  check(refused.status === 400 && refused.json.unknown, `step 4: the API answered ${refused.status} to ${UNKNOWN_SENTENCE}`);
  const reason = refused.json.unknown[0].message;
  await waitFor(page, `step 4: typing ${UNKNOWN_SENTENCE} marked no .unknown-char or showed no #run-error`,
                () => document.querySelector("#run-error").textContent !== "" && document.querySelector("#preview .unknown-char"));
  const marked = await page.$$eval("#preview .unknown-char", (spans) => spans.map((s) => ({
    text: s.textContent, title: s.title,
    // The underline may sit on the span or on the element holding the character inside it.
    underline: [s, ...s.querySelectorAll("*")].map((e) => getComputedStyle(e).textDecorationLine).join(" "),
  })));
  const error = await page.$eval("#run-error", (e) => ({ text: e.innerText, visible: e.offsetParent !== null }));
  check(marked.length === 1, `step 4: ${marked.length} characters marked unknown, expected 1 (${UNKNOWN_CHAR})`);
  check(marked[0].text.includes(UNKNOWN_CHAR), `step 4: the character marked unknown is "${marked[0].text}", not ${UNKNOWN_CHAR}`);
  check(marked[0].underline.includes("underline"), `step 4: ${UNKNOWN_CHAR} is not underlined (${marked[0].underline})`);
  check(marked[0].title === reason, `step 4: ${UNKNOWN_CHAR}'s title is "${marked[0].title}", expected "${reason}"`);
  check(error.visible && error.text.includes(reason), `step 4: #run-error does not show "${reason}": "${error.text}"`);
  await page.screenshot({ path: path.join(outdir, "explorer-unknown.png") });
  expect400 = false;
  noFaults("step 4");
  console.log(`step 4 ok: ${UNKNOWN_CHAR} underlined, "${reason}"`);

  // 5. The URL holds the state: the page opened from the URL of step 3, then a selected position.
  const query = new URL(stateUrl).searchParams;
  check(query.get("text") === SENTENCE, `step 5: the URL after step 3 holds text "${query.get("text")}": ${stateUrl}`);
  await page.goto(stateUrl, { waitUntil: "load" });
  await waitForRun(page, "step 5", SENTENCE);
  const restored = await page.evaluate((head) => ({
    text: document.querySelector("#text").value,
    pressed: (document.querySelector(`#ablate-${head}`) || { getAttribute: () => null }).getAttribute("aria-pressed"),
    ...document.querySelector("#answer").dataset,
  }), reader.head);
  check(restored.text === SENTENCE, `step 5: reloaded from ${stateUrl}, #text holds "${restored.text}"`);
  check(restored.pressed === "true", `step 5: reloaded from ${stateUrl}, ${reader.head} is not off`);
  check(restored.pAblated === answer.pAblated, `step 5: reloaded, data-p-ablated is ${restored.pAblated}, was ${answer.pAblated}`);
  const chosen = SENTENCE.indexOf("谁");
  await page.click(`#preview .char[data-pos="${chosen}"]`);
  await waitFor(page, `step 5: a click on position ${chosen} of #preview did not move #answer there`,
                (pos) => document.querySelector("#answer").dataset.pos === String(pos), chosen);
  const withPos = page.url();
  await page.goto(withPos, { waitUntil: "load" });
  await waitForRun(page, "step 5", SENTENCE);
  const pos = await page.$eval("#answer", (a) => a.dataset.pos);
  check(pos === String(chosen), `step 5: reloaded from ${withPos}, the selected position is ${pos}, expected ${chosen}`);
  noFaults("step 5");
  console.log(`step 5 ok: reloaded ${decodeURI(new URL(withPos).search)}: text, ${reader.head} off and position ${chosen} restored`);

  // 6. The split/merge demo: X = arange(12) as [B=1,T=3,D=4], split into 2 heads of 2 features.
  // A click on a cell outlines (.landed) the cells of the other tensors holding the same number.
  const splitMerge = process.env.SPLIT_MERGE_HTML ? { status: 200 } : await fetch(origin + "/split-merge");
  if (splitMerge.status === 404) {
    console.log("step 6 SKIPPED: /split-merge answers 404 (the page is not served yet)");
  } else {
    check(splitMerge.status === 200, `step 6: /split-merge answers ${splitMerge.status}`);
    await page.goto(origin + "/split-merge", { waitUntil: "load" });
    const x = '[data-tensor="x"][data-b="0"][data-t="1"][data-i="0"]';
    const splitCell = (h, t, j) => `[data-tensor="split"][data-b="0"][data-h="${h}"][data-t="${t}"][data-j="${j}"]`;
    const cellValue = (selector) => page.$eval(selector, (c) => (c.querySelector(".value") || c).textContent.trim())
      .catch(() => null);
    const landedInSplit = () => page.$$eval('[data-tensor="split"].landed', (cells) =>
      cells.map((c) => ({ h: c.dataset.h, t: c.dataset.t, j: c.dataset.j, value: (c.querySelector(".value") || c).textContent.trim() })));
    check(await page.$(x), `step 6: no cell ${x} (x at b=0, t=1, i=0) on /split-merge`);
    // The page opens following the number 4, as the lesson does: through the feature split
    // ([B,T,H,d]: position 1, head 0, feature 0) before the swap of head and position.
    const openedWith = await page.$eval("#demo", (demo) => demo.dataset.selected);
    check(openedWith === "4", `step 6: the page opens with ${JSON.stringify(openedWith)} selected, expected 4`);
    const inFeatures = await page.$$eval('[data-tensor="features"].landed', (cells) =>
      cells.map((c) => `t=${c.dataset.t} h=${c.dataset.h} j=${c.dataset.j}`));
    check(inFeatures.length === 1 && inFeatures[0] === "t=1 h=0 j=0",
          `step 6: 4 is outlined in the feature split at ${inFeatures.join(", ") || "no cell"}, expected t=1 h=0 j=0`);
    const where = await page.$eval("#where", (p) => p.textContent);
    check(where.includes("split the feature axis: [b=0, t=1, h=0, j=0]") && where.includes("swap head and position: [b=0, h=0, t=1, j=0]"),
          `step 6: #where does not give 4's index at each step: ${where}`);
    // The single row of weights: the slider at a = 0.8 puts the point at [0.8, 0.4], off the target.
    await page.$eval("#row-a", (slider) => { slider.value = "80"; slider.dispatchEvent(new Event("input")); });
    const moved = await page.$eval("#single-row-plot .moving", (c) => ({ a: c.dataset.a, x: c.dataset.x, y: c.dataset.y }));
    check(Math.abs(moved.a - 0.8) < 1e-9 && Math.abs(moved.x - 0.8) < 1e-9 && Math.abs(moved.y - 0.4) < 1e-9,
          `step 6: the slider at 80 puts the point at a=${moved.a} (${moved.x}, ${moved.y}), expected a=0.8 (0.8, 0.4)`);
    const readout = await page.$eval("#row-a-output", (o) => o.textContent);
    check(readout.startsWith("a = 0.80: one row gives [0.8, 0.4]") && readout.includes("a = 0.2 for coordinate 1"),
          `step 6: the slider's readout is ${JSON.stringify(readout)}`);
    await page.click(x);
    let landed = await landedInSplit();
    check(landed.length === 1, `step 6: clicking x[b=0,t=1,i=0] outlined ${landed.length} cells of the split, expected 1`);
    check(landed[0].h === "0" && landed[0].t === "1" && landed[0].j === "0" && landed[0].value === "4",
          `step 6: x[b=0,t=1,i=0] lands at head ${landed[0].h}, position ${landed[0].t}, feature ${landed[0].j}, ` +
          `holding ${landed[0].value}; expected head 0, position 1, feature 0, holding 4`);
    await page.click("#forget-transpose");
    check(await page.$eval("#forget-transpose", (box) => box.checked), "step 6: #forget-transpose did not switch on");
    // The transpose forgotten: head 0, position 1, feature 0 now holds 2, and 4 went elsewhere.
    const there = await cellValue(splitCell(0, 1, 0));
    check(there === "2", `step 6: with the transpose forgotten, head 0 position 1 feature 0 holds ${there}, expected 2`);
    landed = await landedInSplit();
    check(landed.length === 1 && landed[0].value === "4" && !(landed[0].h === "0" && landed[0].t === "1"),
          `step 6: with the transpose forgotten, x[b=0,t=1,i=0]'s 4 is outlined at ` +
          `${landed.map((c) => `h=${c.h} t=${c.t} j=${c.j} (${c.value})`).join(", ") || "no cell"}, expected away from head 0 position 1`);
    await page.screenshot({ path: path.join(outdir, "split-merge.png"), fullPage: true });
    noFaults("step 6");
    console.log(`step 6 ok: /split-merge opens following 4 (feature split t=1 h=0 j=0); the slider at a=0.8 gives [0.8, 0.4]; ` +
                `x[b=0,t=1,i=0] lands at head 0, position 1, feature 0 holding 4; ` +
                `with the transpose forgotten that cell holds 2 and 4 lands at h=${landed[0].h} t=${landed[0].t} j=${landed[0].j}`);
  }

  // 7. Nothing went wrong on the way.
  noFaults("step 7");
  console.log(`step 7 ok: no console or page errors; ${runRequests.length} /api/run requests, none outside ${origin}`);
  await page.close();
}

// ---- 9. Other sites --------------------------------------------------------------------------

// A page of another origin (a node server on another loopback port) tries the explorer's API
// three ways, and Chromium, told that rebound.test is 127.0.0.1, opens the explorer under that
// name. Each attempt must fail; the statuses come from the browser's own network events.
async function otherSites(origin) {
  const http = require("http");
  const attacker = `<!doctype html><meta charset="utf-8"><title>another site</title><script>
    const target = ${JSON.stringify(origin)};
    const body = JSON.stringify({ text: "小丁拿着红色的苹果。" });
    async function attempt(what, request) {
      try { const reply = await request(); return what + ": " + (reply.type === "opaque" ? "opaque" : "read " + reply.status); }
      catch (error) { return what + ": failed"; }
    }
    window.results = Promise.all([
      attempt("text/plain POST", () => fetch(target + "/api/run", { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body })),
      attempt("JSON POST", () => fetch(target + "/api/run", { method: "POST", headers: { "Content-Type": "application/json" }, body })),
      attempt("GET /api/model", () => fetch(target + "/api/model")),
    ]);
  </script>`;
  const site = http.createServer((request, response) => {
    response.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    response.end(attacker);
  });
  await new Promise((resolve) => site.listen(0, "127.0.0.1", resolve));
  const siteOrigin = `http://127.0.0.1:${site.address().port}`;
  const port = new URL(origin).port;
  const browser = await launchChromium(puppeteer, CHROMIUM, ["--host-resolver-rules=MAP rebound.test 127.0.0.1"]);
  try {
    const page = await browser.newPage();
    const statuses = [];  // what the explorer answered each request the other site's page sent
    page.on("response", (response) => {
      if (response.url().startsWith(origin + "/")) statuses.push(`${response.request().method()} ${new URL(response.url()).pathname} ${response.status()}`);
    });
    await page.goto(siteOrigin + "/", { waitUntil: "load" });
    const results = await page.evaluate(() => window.results);
    check(JSON.stringify(results) === JSON.stringify(["text/plain POST: opaque", "JSON POST: failed", "GET /api/model: failed"]),
          `step 9: the other site's page got ${JSON.stringify(results)}`);
    check(statuses.includes("POST /api/run 403"),
          `step 9: the explorer did not answer the other site's text/plain POST with 403 (${statuses.join(", ") || "no response seen"})`);
    check(!statuses.includes("POST /api/run 200"), `step 9: the explorer ran the other site's POST (${statuses.join(", ")})`);

    const rebound = `http://rebound.test:${port}`;
    const pageReply = await page.goto(rebound + "/", { waitUntil: "load" });
    const shown = await page.evaluate(() => document.body.innerText);
    check(pageReply.status() === 403 && shown.includes("is not this server"),
          `step 9: ${rebound}/ answered ${pageReply.status()}: ${shown.slice(0, 120)}`);
    const apiStatus = await page.evaluate(async () => (await fetch("/api/model")).status);  // same origin to the browser
    check(apiStatus === 403, `step 9: ${rebound}/api/model, from a page of that origin, answered ${apiStatus}`);
    console.log(`step 9 ok: from ${siteOrigin}: ${results.join("; ")} (the explorer answered ${statuses.join(", ")}); ` +
                `under ${rebound} (rebound to 127.0.0.1): the page 403, /api/model 403`);
  } finally {
    await browser.close();
    site.close();
  }
}

async function main() {
  const [binary, checkpoint, outdir] = process.argv.slice(2);
  if (!binary || !checkpoint || !outdir) {
    console.error("usage: node check-explorer.js BINARY CHECKPOINT OUTDIR");
    return 2;
  }
  fs.mkdirSync(outdir, { recursive: true });
  let server;
  try {
    server = await startServer(binary, checkpoint);
  } catch (error) {
    console.log(`check-explorer: FAIL: ${error.message}`);
    return 2;
  }
  const replaced = ["EXPLORER_HTML", "SPLIT_MERGE_HTML"].filter((name) => process.env[name])
    .map((name) => `${name}=${process.env[name]}`);
  console.log(`check-explorer: ${server.origin}/ serving ${checkpoint}${replaced.length ? ` (pages from ${replaced.join(", ")})` : ""}`);
  let browser, code = 0;
  try {
    browser = await launchChromium(puppeteer, CHROMIUM);
  } catch (error) {
    console.log(`check-explorer: FAIL: could not start ${CHROMIUM}: ${error.message.split("\n")[0]}`);
    await stopServer(server.child, 5000);
    return 2;
  }
  const faults = [];
  try {
    await steps(browser, server.origin, binary, checkpoint, outdir, faults);
    const shots = ["explorer.png", "explorer-hover.png", "explorer-unknown.png", "split-merge.png"]
      .filter((f) => fs.existsSync(path.join(outdir, f)));
    console.log(`step 8 ok: screenshots in ${outdir}: ${shots.join(", ")}`);
    await otherSites(server.origin);
  } catch (error) {
    const why = error instanceof Failure ? error.message : `${error.message.split("\n")[0]}`;
    // A script error or a stray request is often the cause: named beside the failed check.
    const also = faults.length && !why.includes(faults[0]) ? `; before it: ${faults[0]}` : "";
    console.log(`check-explorer: FAIL: ${why}${also}`);
    code = 1;
  } finally {
    await browser.close();
  }
  const started = Date.now();
  const exit = await stopServer(server.child, 5000);
  if (exit !== 0) {
    if (exit === null) server.child.kill("SIGKILL");
    if (code === 0) console.log(`check-explorer: FAIL: after SIGINT the server ${exit === null ? "did not exit within 5 s" : `exited ${exit}`}`);
    return 1;
  }
  if (code === 0) console.log(`server ok: SIGINT, exit 0 in ${Date.now() - started} ms`);
  if (code === 0) console.log("check-explorer: OK");
  return code;
}

main().then((code) => process.exit(code), (error) => {
  console.log(`check-explorer: FAIL: ${error.message.split("\n")[0]}`);
  process.exit(1);
});
