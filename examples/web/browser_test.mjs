// The browser test: headless Chromium opens the example page (served from its own origin) and
// calls the greeter over gRPC-Web; the results are read off the page.
//
//   node browser_test.mjs PAGE_URL SERVER_URL REFUSING_SERVER_URL
//
// SERVER_URL allows pages of any origin (the default); REFUSING_SERVER_URL allows only another
// origin, so its preflight is refused and the page's call fails. Prints one line per check and
// "N passed, M failed"; exits non-zero if any failed. Every wait is bounded.
import puppeteer from "puppeteer-core";

const [pageUrl, server, refusingServer] = process.argv.slice(2);
const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  // As the workplace runs Chromium: no sandbox as root, and nothing reaching outside.
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});

/** Opens the page against `target` and returns what it shows. */
async function visit(target) {
  const page = await browser.newPage();
  try {
    const url = `${pageUrl}?server=${encodeURIComponent(target)}`;
    await page.goto(url, { timeout: 20_000 });
    await page.waitForFunction(() => document.getElementById("done").textContent === "done", {
      timeout: 20_000,
    });
    return await page.evaluate(() =>
      Object.fromEntries(["hello", "health", "error"].map((id) => [id, document.getElementById(id).textContent])),
    );
  } finally {
    await page.close();
  }
}

let passed = 0;
let failed = 0;
function check(name, ok, seen) {
  if (ok) {
    passed += 1;
    console.log(`PASS ${name}`);
  } else {
    failed += 1;
    console.log(`FAIL ${name}: ${JSON.stringify(seen)}`);
  }
}

try {
  const seen = await visit(server);
  check("SayHello answers", seen.hello === "Hello browser!" && seen.error === "", seen);
  check("Health/Watch streams SERVING", seen.health === "SERVING", seen);
  const refused = await visit(refusingServer);
  check("a server that allows only another origin is refused", refused.hello === "" && refused.error !== "", refused);
} catch (error) {
  failed += 1;
  console.log(`FAIL the page did not finish: ${error}`);
} finally {
  await browser.close();
}
console.log(`browser: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
