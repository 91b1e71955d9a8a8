// Opens an inspect report.html in headless Chromium (Debian's /usr/bin/chromium, driven by
// puppeteer-core) the way a reader opens it, from file://, and fails on anything a reader
// would meet as a fault:
//   - a request that leaves the file: nothing but file: and data: URLs may be asked for
//     (the report promises to fetch nothing);
//   - an error on the console, or a script error on the page;
//   - a picture that did not decode: every <img>, and every SVG <image> (whose data is loaded
//     again into an Image and decoded, as SVG's <image> has no naturalWidth of its own);
//   - an embedded PNG (a data: URI) that is not whole: Chromium shows a PNG cut short or with
//     wrong chunk CRCs without complaint, so each one's chunks are read here: the signature,
//     IHDR first, every chunk's CRC-32, IEND last and nothing after it.
// Prints the page's size, its sections and figures, and how long it took to load, and writes a
// full-page screenshot. Exit 0: all well; 1: the check failed (one line says why); 2: usage or
// the browser would not start.
//
//   node check-report.js REPORT.html SCREENSHOT.png
"use strict";

const fs = require("fs");
const path = require("path");
const { pathToFileURL } = require("url");
const puppeteer = require("puppeteer-core");
const { launchChromium } = require("../lib/headless-chromium.js");

const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";

// CRC-32 as PNG chunks use it (the PNG spec's annex D: polynomial 0xEDB88320, reflected).
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(bytes) {
  let c = 0xffffffff;
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// Why a PNG's bytes are not a whole PNG, or "" if they are.
function pngFault(png) {
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (png.length < 8 || !png.subarray(0, 8).equals(signature)) return "no PNG signature";
  let at = 8, first = true;
  while (at < png.length) {
    if (at + 12 > png.length) return `cut off ${png.length - at} bytes into a chunk header`;
    const length = png.readUInt32BE(at);
    const type = png.toString("latin1", at + 4, at + 8);
    if (at + 12 + length > png.length) return `${type} chunk cut off`;
    if (first && type !== "IHDR") return `${type} before IHDR`;
    if (crc32(png.subarray(at + 4, at + 8 + length)) !== png.readUInt32BE(at + 8 + length)) return `${type}: wrong CRC`;
    at += 12 + length;
    first = false;
    if (type === "IEND") return at === png.length ? "" : `${png.length - at} bytes after IEND`;
  }
  return "no IEND: cut short";
}

async function main() {
  const [reportPath, screenshotPath] = process.argv.slice(2);
  if (!reportPath || !screenshotPath) {
    console.error("usage: node check-report.js REPORT.html SCREENSHOT.png");
    return 2;
  }
  const url = pathToFileURL(path.resolve(reportPath)).href;
  const bytes = fs.statSync(reportPath).size;

  let browser;
  try {
    browser = await launchChromium(puppeteer, CHROMIUM);
  } catch (error) {
    console.error(`check-report: could not start ${CHROMIUM}: ${error.message.split("\n")[0]}`);
    return 2;
  }
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1400, height: 900 });

    // Faults, in the order they happen; the first is the one reported.
    const faults = [];
    await page.setRequestInterception(true);
    page.on("request", (request) => {
      const requested = request.url();
      if (requested.startsWith("file:") || requested.startsWith("data:")) return request.continue();
      faults.push(`the report requested ${requested} (only file: and data: are allowed)`);
      return request.abort();
    });
    page.on("console", (message) => {
      if (message.type() === "error") faults.push(`console error: ${message.text()}`);
    });
    page.on("pageerror", (error) => faults.push(`page error: ${error.message}`));

    const started = Date.now();
    await page.goto(url, { waitUntil: "load", timeout: 60000 });
    const loadMs = Date.now() - started;

    // Every picture: an <img> must have decoded (naturalWidth > 0); an SVG <image>'s data is
    // decoded anew by an Image, which rejects what the browser could not read.
    const pictures = await page.evaluate(async () => {
      const broken = [];
      const images = Array.from(document.querySelectorAll("img"));
      for (const img of images)
        if (!img.complete || img.naturalWidth === 0) broken.push(`<img src="${img.src.slice(0, 60)}">`);
      const svgImages = Array.from(document.querySelectorAll("image"));
      for (const [index, image] of svgImages.entries()) {
        const href = image.getAttribute("href") || image.getAttribute("xlink:href") || "";
        const probe = new Image();
        probe.src = new URL(href, document.baseURI).href;
        try {
          await probe.decode();
          if (probe.naturalWidth === 0) throw new Error("no width");
        } catch (error) {
          const figure = image.closest("figure");
          const title = figure ? (figure.querySelector("text") || {}).textContent || "" : "";
          broken.push(`<image> ${index + 1} (${title || href.slice(0, 40)})`);
        }
      }
      const embedded = images.map((img) => img.getAttribute("src") || "")
        .concat(svgImages.map((image) => image.getAttribute("href") || image.getAttribute("xlink:href") || ""))
        .filter((uri) => uri.startsWith("data:image/png;base64,"));
      return { img: images.length, svgImage: svgImages.length, broken, embedded };
    });
    for (const broken of pictures.broken) faults.push(`a picture did not decode: ${broken}`);
    for (const [index, uri] of pictures.embedded.entries()) {
      const fault = pngFault(Buffer.from(uri.slice(uri.indexOf(",") + 1), "base64"));
      if (fault) faults.push(`embedded PNG ${index + 1} of ${pictures.embedded.length} is not whole: ${fault}`);
    }

    const layout = await page.evaluate(() => ({
      sections: document.querySelectorAll("h2").length,
      figures: document.querySelectorAll("figure").length,
      svgs: document.querySelectorAll("svg").length,
      width: document.documentElement.scrollWidth,
      height: document.documentElement.scrollHeight,
    }));
    await page.screenshot({ path: screenshotPath, fullPage: true });

    console.log(`check-report: ${url}`);
    console.log(`  file size  ${(bytes / 1e6).toFixed(2)} MB (${bytes} bytes)`);
    console.log(`  load       ${loadMs} ms (file: to the load event, headless Chromium)`);
    console.log(`  sections   ${layout.sections} (<h2>), figures ${layout.figures}, <svg> ${layout.svgs}`);
    console.log(`  pictures   ${pictures.img} <img>, ${pictures.svgImage} SVG <image>, ` +
                `${pictures.img + pictures.svgImage - pictures.broken.length} decoded; ` +
                `${pictures.embedded.length} embedded PNGs`);
    console.log(`  page       ${layout.width}×${layout.height} px; screenshot ${screenshotPath}`);
    if (faults.length > 0) {
      console.log(`check-report: FAIL: ${faults[0]}${faults.length > 1 ? ` (and ${faults.length - 1} more)` : ""}`);
      for (const fault of faults.slice(1)) console.log(`  also: ${fault}`);
      return 1;
    }
    console.log("check-report: OK");
    return 0;
  } finally {
    await browser.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.log(`check-report: FAIL: ${error.message.split("\n")[0]}`);
    process.exit(1);
  },
);
