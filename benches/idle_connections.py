"""Memory per idle HTTP/2 connection, for `bash benches/e2e.sh idle`.

Opens N connections to a gRPC server on loopback, makes one SayHello call on each (so buffers
that grow on first use are counted), holds them all idle, and reports the server's VmRSS growth
per connection. Plain asyncio with a hand-written HTTP/2 framing (no packages to install): only
what a client needs to send one call and stay a good peer (SETTINGS and PING acknowledged).

    python3 benches/idle_connections.py --port 50061 --pid PID [--connections 1000]
"""

import argparse
import asyncio
import struct
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, SETTINGS, PING, GOAWAY = 0x0, 0x1, 0x4, 0x6, 0x7
END_STREAM, ACK = 0x1, 0x1
# HelloRequest { name: "world" } in one gRPC frame, and the reply the greeters give it.
REQUEST = b"\x00\x00\x00\x00\x07\x0a\x05world"
REPLY = b"\x00\x00\x00\x00\x0e\x0a\x0cHello world!"


def frame(kind, flags, stream, payload=b""):
    head = struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream)
    return head + payload


def literal(name, value):
    # HPACK literal without indexing, new name, no Huffman: nothing to decode on the server's
    # side that the test depends on, and no dynamic table to keep.
    name, value = name.encode(), value.encode()
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def request_headers(port):
    return (
        b"\x83\x86"  # :method POST, :scheme http (static table)
        + literal(":path", "/helloworld.Greeter/SayHello")
        + literal(":authority", f"127.0.0.1:{port}")
        + literal("content-type", "application/grpc")
        + literal("te", "trailers")
    )


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


class Connection:
    def __init__(self):
        self.answered = asyncio.get_running_loop().create_future()
        self.reply = b""
        self.closed = False

    async def open(self, port):
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", port)
        self.writer.write(
            PREFACE
            + frame(SETTINGS, 0, 0)
            + frame(HEADERS, 0x4, 1, request_headers(port))  # END_HEADERS
            + frame(DATA, END_STREAM, 1, REQUEST)
        )
        self.task = asyncio.create_task(self.read())

    async def read(self):
        try:
            while True:
                head = await self.reader.readexactly(9)
                length = int.from_bytes(head[:3], "big")
                kind, flags = head[3], head[4]
                stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
                payload = await self.reader.readexactly(length)
                if kind == SETTINGS and not flags & ACK:
                    self.writer.write(frame(SETTINGS, ACK, 0))
                elif kind == PING and not flags & ACK:
                    self.writer.write(frame(PING, ACK, 0, payload))
                elif kind == GOAWAY:
                    break
                elif kind == DATA and stream == 1:
                    self.reply += payload
                if stream == 1 and kind in (DATA, HEADERS) and flags & END_STREAM:
                    if not self.answered.done():
                        self.answered.set_result(self.reply)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        self.closed = True
        if not self.answered.done():
            self.answered.set_exception(RuntimeError("connection closed before the reply"))


async def main(args):
    # After the start-up probe's connection has come and gone.
    await asyncio.sleep(0.5)
    before = rss_kib(args.pid)
    connections = []
    # A few connects at a time: the listener's backlog is not what this measures.
    gate = asyncio.Semaphore(64)

    async def one():
        async with gate:
            connection = Connection()
            await connection.open(args.port)
            connections.append(connection)
            return await connection.answered

    replies = await asyncio.gather(*(one() for _ in range(args.connections)))
    wrong = sum(reply != REPLY for reply in replies)
    if wrong:
        raise RuntimeError(f"{wrong} calls did not get the expected reply")
    # Let the server finish whatever it does after a call (tasks ending, buffers released).
    await asyncio.sleep(args.settle)
    after = rss_kib(args.pid)
    closed = sum(connection.closed for connection in connections)
    if closed:
        raise RuntimeError(f"{closed} connections closed while idle")
    for connection in connections:
        connection.writer.close()
    print(
        f"{args.name:<34} RSS {before:>7} -> {after:>7} KiB, "
        f"{(after - before) / args.connections:6.2f} KiB/connection"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--settle", type=float, default=2.0)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--name", default="server")
    args = parser.parse_args()
    started = time.monotonic()
    try:
        asyncio.run(asyncio.wait_for(main(args), args.timeout))
    except Exception as error:  # noqa: BLE001: one line on stderr, a failing exit
        print(f"{args.name}: {error!r} after {time.monotonic() - started:.1f} s", file=sys.stderr)
        sys.exit(1)
