#!/usr/bin/env python3
"""A delay line for the emulated-link download benchmark (SatchelBenchmarks link).

Listens on 127.0.0.1:LISTEN and forwards every connection to UPSTREAM_HOST:UPSTREAM_PORT, delivering
each chunk half a round trip after it arrived, in both directions, so every request costs one round
trip. A new connection's first bytes wait one more round trip: the TCP handshake a real link costs.
The link's rate is not limited here (tc tbf does that on the origin's side).

usage: delay-line.py LISTEN UPSTREAM_HOST UPSTREAM_PORT RTT_MS
"""
import asyncio
import sys


async def pump(reader, writer, delay, not_before):
    """Copies reader to writer, each chunk delayed by `delay` seconds (and never before `not_before`)."""
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def deliver():
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    sender = asyncio.create_task(deliver())
    try:
        while True:
            data = await reader.read(1 << 16)
            queue.put_nowait((max(loop.time(), not_before) + delay, data))
            if not data:
                break
        await sender
    except (ConnectionError, OSError):
        sender.cancel()


async def main(listen, host, port, rtt):
    async def accept(client_reader, client_writer):
        loop = asyncio.get_running_loop()
        handshake = loop.time() + rtt
        try:
            origin_reader, origin_writer = await asyncio.open_connection(host, port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pump(client_reader, origin_writer, rtt / 2, handshake),
                             pump(origin_reader, client_writer, rtt / 2, 0), return_exceptions=True)
        for writer in (origin_writer, client_writer):
            writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", listen, backlog=512)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4]) / 1000))
