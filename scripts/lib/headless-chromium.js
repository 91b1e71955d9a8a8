// Debian's chromium, headless, for the browser checks (scripts/check-report.sh and
// scripts/check-explorer.sh). `puppeteer` is the caller's puppeteer-core (each check is its
// own npm project with its own lock file); `executablePath` is /usr/bin/chromium or $CHROMIUM.
"use strict";

// `extraArgs`: more command-line switches (check-explorer.sh's --host-resolver-rules).
function launchChromium(puppeteer, executablePath, extraArgs = []) {
  return puppeteer.launch({
    executablePath,
    headless: true,
    // --no-sandbox: Chromium refuses to run as root with its sandbox (a container's root).
    args: ["--no-sandbox", "--disable-gpu", "--font-render-hinting=none", ...extraArgs],
  });
}

module.exports = { launchChromium };
