// Calls examples/greeter_server from the browser over gRPC-Web: Greeter.SayHello (unary) and
// grpc.health.v1.Health/Watch (server streaming), and shows the results on the page.
//
// The server's address comes from the page's `?server=` parameter (default: the greeter's
// default address), so the page can be served from another origin, as web front ends are.
import { createClient, ConnectError } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { Greeter } from "./gen/helloworld_pb";
import { Health, HealthCheckResponse_ServingStatus } from "./gen/grpc/health/v1/health_pb";

const params = new URLSearchParams(location.search);
// Protobuf messages (connect-web's binary format): fastgrpc serves `application/grpc-web+proto`.
const transport = createGrpcWebTransport({
  baseUrl: params.get("server") ?? "http://127.0.0.1:50051",
  useBinaryFormat: true,
});

function show(id: string, text: string) {
  const element = document.getElementById(id);
  if (element) element.textContent = text;
}

async function main() {
  try {
    const greeter = createClient(Greeter, transport);
    const reply = await greeter.sayHello({ name: params.get("name") ?? "browser" });
    show("hello", reply.message);

    // The first status the server streams, then the stream is cancelled.
    const health = createClient(Health, transport);
    const abort = new AbortController();
    for await (const update of health.watch({ service: "" }, { signal: abort.signal })) {
      show("health", HealthCheckResponse_ServingStatus[update.status]);
      abort.abort();
      break;
    }
  } catch (error) {
    show("error", error instanceof ConnectError ? `${error.code}: ${error.rawMessage}` : String(error));
  }
  show("done", "done");
}

main();
