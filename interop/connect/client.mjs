// The Connect project's Node client (@connectrpc/connect-node 2.1.1) against
// examples/interop_server: every transport it has (Connect, gRPC, gRPC-Web), in binary and
// JSON, over HTTP/1.1 and HTTP/2 where the protocol allows, through the same cases.
//
//   node client.mjs PORT
//
// Prints one line per case and transport, and `N passed, N failed` at the end; exits 1 on any
// failure. Loopback only; every call has a timeout.

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import {
  Http2SessionManager,
  compressionGzip,
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  createNodeHttpClient,
} from "@connectrpc/connect-node";
import { createTransport } from "@connectrpc/connect/protocol-connect";
import { TestService } from "./gen/grpc/testing/test_pb.js";
import { JsonTest } from "./gen/jsontest/jsontest_pb.js";

const port = process.argv[2];
if (!port) {
  console.error("usage: node client.mjs PORT");
  process.exit(2);
}
const baseUrl = `http://127.0.0.1:${port}`;

// Every transport the client has, with what each protocol supports (gRPC needs HTTP/2).
const transports = [];
for (const useBinaryFormat of [true, false]) {
  const format = useBinaryFormat ? "proto" : "json";
  for (const httpVersion of ["1.1", "2"]) {
    transports.push({
      name: `connect+${format} over HTTP/${httpVersion}`,
      protocol: "connect",
      transport: createConnectTransport({ baseUrl, httpVersion, useBinaryFormat }),
    });
    transports.push({
      name: `grpc-web+${format} over HTTP/${httpVersion}`,
      protocol: "grpc-web",
      transport: createGrpcWebTransport({ baseUrl, httpVersion, useBinaryFormat }),
    });
  }
  transports.push({
    name: `grpc+${format} over HTTP/2`,
    protocol: "grpc",
    transport: createGrpcTransport({ baseUrl, useBinaryFormat }),
  });
}

function check(condition, what) {
  if (!condition) throw new Error(what);
}

const options = { timeoutMs: 10_000 };

// The cases: each takes a client; `requestStreams` marks those that send a stream of
// requests (which gRPC-Web cannot), `fullDuplex` those that need HTTP/2.
const cases = [
  {
    name: "empty_unary",
    async run(client) {
      const reply = await client.emptyCall({}, options);
      check(reply !== undefined, "an empty reply");
    },
  },
  {
    name: "large_unary",
    async run(client) {
      const reply = await client.unaryCall(
        { responseSize: 314159, payload: { body: new Uint8Array(271828) } },
        options,
      );
      check(reply.payload?.body.length === 314159, `reply of ${reply.payload?.body.length} bytes`);
    },
  },
  {
    name: "custom_metadata",
    async run(client) {
      const headers = new Headers({
        "x-grpc-test-echo-initial": "test_initial_metadata_value",
        "x-grpc-test-echo-trailing-bin": "q6ur",
      });
      let header, trailer;
      await client.unaryCall(
        { responseSize: 1, payload: { body: new Uint8Array(1) } },
        {
          ...options,
          headers,
          onHeader: (h) => (header = h),
          onTrailer: (t) => (trailer = t),
        },
      );
      check(
        header?.get("x-grpc-test-echo-initial") === "test_initial_metadata_value",
        `initial metadata: ${[...(header ?? [])]}`,
      );
      const trailing = trailer?.get("x-grpc-test-echo-trailing-bin");
      check(trailing?.replace(/=+$/, "") === "q6ur", `trailing metadata: ${[...(trailer ?? [])]}`);
    },
  },
  {
    name: "status_code_and_message",
    async run(client) {
      try {
        await client.unaryCall(
          { responseStatus: { code: 2, message: "test status message" } },
          options,
        );
      } catch (error) {
        const e = ConnectError.from(error);
        check(e.code === Code.Unknown, `code ${Code[e.code]}`);
        check(e.rawMessage === "test status message", `message ${e.rawMessage}`);
        return;
      }
      throw new Error("the call succeeded");
    },
  },
  {
    name: "special_status_message",
    async run(client) {
      const message = "\t\ntest with whitespace\r\nand Unicode BMP ☺ and non-BMP 😈\t\n";
      try {
        await client.unaryCall({ responseStatus: { code: 2, message } }, options);
      } catch (error) {
        check(ConnectError.from(error).rawMessage === message, "the message survives");
        return;
      }
      throw new Error("the call succeeded");
    },
  },
  {
    name: "unimplemented_method",
    async run(client) {
      try {
        await client.unimplementedCall({}, options);
      } catch (error) {
        const e = ConnectError.from(error);
        check(e.code === Code.Unimplemented, `code ${Code[e.code]}`);
        return;
      }
      throw new Error("the call succeeded");
    },
  },
  {
    name: "server_streaming",
    async run(client) {
      const sizes = [31415, 9, 2653, 58979];
      const received = [];
      for await (const reply of client.streamingOutputCall(
        { responseParameters: sizes.map((size) => ({ size })) },
        options,
      )) {
        received.push(reply.payload?.body.length);
      }
      check(JSON.stringify(received) === JSON.stringify(sizes), `sizes ${received}`);
    },
  },
  {
    name: "client_streaming",
    requestStreams: true,
    async run(client) {
      async function* requests() {
        for (const size of [27182, 8, 1828, 45904]) {
          yield { payload: { body: new Uint8Array(size) } };
        }
      }
      const reply = await client.streamingInputCall(requests(), options);
      check(reply.aggregatedPayloadSize === 74922, `sum ${reply.aggregatedPayloadSize}`);
    },
  },
  {
    name: "ping_pong",
    requestStreams: true,
    fullDuplex: true,
    async run(client) {
      const sizes = [31415, 9, 2653, 58979];
      const received = [];
      for await (const reply of client.fullDuplexCall(
        (async function* () {
          for (const size of sizes) {
            yield { responseParameters: [{ size }], payload: { body: new Uint8Array(size) } };
          }
        })(),
        options,
      )) {
        received.push(reply.payload?.body.length);
      }
      check(JSON.stringify(received) === JSON.stringify(sizes), `sizes ${received}`);
    },
  },
  {
    name: "timeout_on_sleeping_server",
    fullDuplex: true,
    async run(client) {
      try {
        for await (const _ of client.fullDuplexCall(
          (async function* () {
            yield { responseParameters: [{ size: 31415 }], payload: { body: new Uint8Array(27182) } };
            await new Promise((resolve) => setTimeout(resolve, 2000));
          })(),
          { timeoutMs: 1 },
        )) {
          // Replies may come before the deadline.
        }
      } catch (error) {
        const e = ConnectError.from(error);
        check(e.code === Code.DeadlineExceeded, `code ${Code[e.code]}`);
        return;
      }
      throw new Error("the call succeeded");
    },
  },
];

let passed = 0;
let failed = 0;
for (const { name: transportName, protocol, transport } of transports) {
  const client = createClient(TestService, transport);
  const http1 = transportName.endsWith("HTTP/1.1");
  for (const testCase of cases) {
    if (testCase.requestStreams && protocol === "grpc-web") continue;
    if (testCase.fullDuplex && http1) continue;
    try {
      await testCase.run(client, protocol);
      passed++;
      console.log(`ok   ${testCase.name} (${transportName})`);
    } catch (error) {
      failed++;
      console.log(`FAIL ${testCase.name} (${transportName}): ${error?.message ?? error}`);
    }
  }
}
// Connect's GET, for a method whose proto says it has no side effects (jsontest.Echo, which
// interop_server hosts too). The transport is connect-node's, assembled by hand so that its
// HTTP client can note the method each request went out with.
for (const useBinaryFormat of [true, false]) {
  for (const httpVersion of ["1.1", "2"]) {
    const name = `echo over GET (connect+${useBinaryFormat ? "proto" : "json"} over HTTP/${httpVersion})`;
    const methods = [];
    const sessions = httpVersion === "2" ? new Http2SessionManager(baseUrl) : undefined;
    const inner = sessions
      ? createNodeHttpClient({ httpVersion: "2", sessionProvider: () => sessions })
      : createNodeHttpClient({ httpVersion: "1.1" });
    const transport = createTransport({
      baseUrl,
      useBinaryFormat,
      useHttpGet: true,
      httpClient: (request) => {
        methods.push(request.method);
        return inner(request);
      },
      interceptors: [],
      acceptCompression: [compressionGzip],
      sendCompression: null,
      compressMinBytes: 1024,
      readMaxBytes: 0xffffffff,
      writeMaxBytes: 0xffffffff,
    });
    try {
      const reply = await createClient(JsonTest, transport).echo(
        { s: "got", i64: -7n, by: new Uint8Array([1, 2]) },
        options,
      );
      check(methods.join() === "GET", `sent with ${methods}`);
      check(reply.s === "got" && reply.i64 === -7n && reply.by.length === 2, "echoed");
      passed++;
      console.log(`ok   ${name}`);
    } catch (error) {
      failed++;
      console.log(`FAIL ${name}: ${error?.message ?? error}`);
    }
    sessions?.abort();
  }
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
