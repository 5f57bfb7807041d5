// The browser test: headless Chromium opens the example page (served from its own origin) and
// calls the greeter over gRPC-Web, then opens watch.html (the same origin), whose EventSource
// follows transcoding.v1.Echo/Watch over REST; the results are read off the pages.
//
//   node browser_test.mjs PAGE_URL SERVER_URL REFUSING_SERVER_URL REST_SERVER_URL
//
// SERVER_URL allows pages of any origin (the default); REFUSING_SERVER_URL allows only another
// origin, so its preflight is refused and the page's call fails; REST_SERVER_URL is
// examples/transcoding_server, of another origin than the page. Prints one line per check and
// "N passed, M failed"; exits non-zero if any failed. Every wait is bounded.
import puppeteer from "puppeteer-core";

const [pageUrl, server, refusingServer, restServer] = process.argv.slice(2);
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

/** Opens `url` and returns the text of the elements `ids` once it shows "done". */
async function visitPage(url, ids) {
  const page = await browser.newPage();
  try {
    await page.goto(url, { timeout: 20_000 });
    await page.waitForFunction(() => document.getElementById("done").textContent === "done", {
      timeout: 20_000,
    });
    return await page.evaluate(
      (ids) => Object.fromEntries(ids.map((id) => [id, document.getElementById(id).textContent])),
      ids,
    );
  } finally {
    await page.close();
  }
}

/** Opens the page against `target` and returns what it shows. */
function visit(target) {
  return visitPage(`${pageUrl}?server=${encodeURIComponent(target)}`, ["hello", "health", "error"]);
}

/** Opens watch.html, beside the page, against the REST server `target`. */
function visitWatch(target) {
  const url = new URL("watch.html", pageUrl);
  url.searchParams.set("rest", target);
  return visitPage(url.href, ["messages", "error"]);
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
  const watched = await visitWatch(restServer);
  const book = "shelves/1/books/2";
  check(
    "EventSource follows Echo/Watch over REST: 3 messages",
    watched.messages === [book, book, book].join(" ") && watched.error === "",
    watched,
  );
} catch (error) {
  failed += 1;
  console.log(`FAIL the page did not finish: ${error}`);
} finally {
  await browser.close();
}
console.log(`browser: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
