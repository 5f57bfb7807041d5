// `buf curl` (from the @bufbuild/buf npm package: connect-go's client inside the buf CLI)
// against examples/interop_server: the Connect, gRPC and gRPC-Web protocols over HTTP/1.1 and
// HTTP/2 where the protocol allows, with the schema compiled from proto/'s interop files (no
// reflection).
// A second client of the Connect ecosystem beside client.mjs's connect-node, written in Go.
//
//   node buf_curl.mjs PORT
//
// Prints one line per case, and `N passed, N failed` at the end; exits 1 on any failure.
// Loopback only; every call has a timeout.

import { spawnSync } from "node:child_process";

const port = process.argv[2];
if (!port) {
  console.error("usage: node buf_curl.mjs PORT");
  process.exit(2);
}
const service = `http://127.0.0.1:${port}/grpc.testing.TestService`;

// The schema, built once as a Buf image from the interop protos only: proto/ also holds protos
// that import googleapis, which live with fastgrpc-build, not in proto/.
const schema = "../../target/buf-curl-schema.binpb";
const build = spawnSync(
  "npx",
  ["buf", "build", "../../proto", "--path", "../../proto/grpc/testing", "-o", schema],
  { encoding: "utf8", timeout: 120_000 },
);
if (build.status !== 0) {
  console.error(`buf build failed: ${build.stderr ?? ""}`);
  process.exit(1);
}

// Runs `buf curl` for `method` with the JSON `data`: its exit code, stdout and stderr.
function bufCurl({ protocol, http2 }, method, data, extra = []) {
  const args = ["buf", "curl", "--schema", schema, "--protocol", protocol, "--timeout", "20s"];
  if (http2) args.push("--http2-prior-knowledge");
  args.push(...extra, "-d", data, `${service}/${method}`);
  const run = spawnSync("npx", args, { encoding: "utf8", timeout: 30_000 });
  return { code: run.status, out: run.stdout ?? "", err: run.stderr ?? "" };
}

// The JSON documents `buf curl` printed, one per reply message.
function messages(out) {
  const found = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < out.length; i++) {
    if (out[i] === "{") {
      if (depth++ === 0) start = i;
    } else if (out[i] === "}" && --depth === 0) {
      found.push(JSON.parse(out.slice(start, i + 1)));
    }
  }
  return found;
}

function check(condition, what) {
  if (!condition) throw new Error(what);
}

function ok(run) {
  check(run.code === 0, `exit ${run.code}: ${run.err.trim()}`);
  return messages(run.out);
}

const cases = [
  {
    name: "unary",
    run(t) {
      const [reply] = ok(bufCurl(t, "UnaryCall", '{"response_size": 3}'));
      check(reply?.payload?.body === "AAAA", `reply ${JSON.stringify(reply)}`);
    },
  },
  {
    name: "metadata both ways",
    run(t) {
      const run = bufCurl(t, "UnaryCall", "{}", [
        "-v",
        "-H",
        "x-grpc-test-echo-initial: hello",
        "-H",
        "x-grpc-test-echo-trailing-bin: AQI=",
      ]);
      ok(run);
      const received = run.err.split("\n").filter((line) => line.includes("< "));
      check(
        received.some((line) => /x-grpc-test-echo-initial: hello/i.test(line)),
        `no initial metadata in ${received.join(" | ")}`,
      );
      // buf prints HTTP trailers (gRPC's) and `trailer-` headers (Connect's), but not the
      // trailers frame of a gRPC-Web body; client.mjs checks those.
      check(
        t.protocol === "grpcweb" ||
          received.some((line) => /x-grpc-test-echo-trailing-bin: AQI=/i.test(line)),
        `no trailing metadata in ${received.join(" | ")}`,
      );
    },
  },
  {
    name: "error status",
    run(t) {
      const run = bufCurl(t, "UnaryCall", '{"response_status": {"code": 5, "message": "nope"}}');
      check(run.code !== 0, "the call did not fail");
      const [error] = messages(run.err);
      check(
        error?.code === "not_found" && error?.message === "nope",
        `error ${run.err.trim()}`,
      );
    },
  },
  {
    name: "server streaming",
    run(t) {
      const replies = ok(
        bufCurl(t, "StreamingOutputCall", '{"response_parameters": [{"size": 1}, {"size": 2}]}'),
      );
      const bodies = replies.map((reply) => reply.payload?.body);
      check(JSON.stringify(bodies) === '["AA==","AAA="]', `replies ${JSON.stringify(replies)}`);
    },
  },
  {
    name: "client streaming",
    requestStream: true,
    run(t) {
      const [reply] = ok(
        bufCurl(
          t,
          "StreamingInputCall",
          '{"payload": {"body": "AAA="}} {"payload": {"body": "AAAAAA=="}}',
        ),
      );
      check(reply?.aggregatedPayloadSize === 6, `reply ${JSON.stringify(reply)}`);
    },
  },
  {
    name: "bidi streaming",
    requestStream: true,
    fullDuplex: true,
    run(t) {
      const replies = ok(
        bufCurl(
          t,
          "FullDuplexCall",
          '{"response_parameters": [{"size": 1}]} {"response_parameters": [{"size": 2}]}',
        ),
      );
      const bodies = replies.map((reply) => reply.payload?.body);
      check(JSON.stringify(bodies) === '["AA==","AAA="]', `replies ${JSON.stringify(replies)}`);
    },
  },
];

// gRPC needs HTTP/2; gRPC-Web sends no request streams; full duplex needs HTTP/2.
const transports = [
  { protocol: "connect", http2: false },
  { protocol: "connect", http2: true },
  { protocol: "grpcweb", http2: false },
  { protocol: "grpcweb", http2: true },
  { protocol: "grpc", http2: true },
];

let passed = 0;
let failed = 0;
for (const t of transports) {
  const name = `${t.protocol} over HTTP/${t.http2 ? "2" : "1.1"}`;
  for (const c of cases) {
    if (c.requestStream && t.protocol === "grpcweb") continue;
    if (c.fullDuplex && !t.http2) continue;
    try {
      c.run(t);
      passed++;
      console.log(`ok   ${c.name} (${name})`);
    } catch (error) {
      failed++;
      console.log(`FAIL ${c.name} (${name}): ${error.message}`);
    }
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
