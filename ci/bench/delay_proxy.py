"""TCP delay proxy: 127.0.0.1:BASE+i -> 127.0.0.i:PORT, each chunk delayed by D seconds.

Usage: delay_proxy.py D N BASE PORT. Every chunk is stamped when read and written at
stamp + D (no cumulative delay), TCP_NODELAY on both sides, so one round trip gains 2*D.
"""

import asyncio
import socket
import sys


async def pump(reader, writer, delay):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def sender():
        while True:
            due, data = await queue.get()
            if data is None:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    task = asyncio.create_task(sender())
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            queue.put_nowait((loop.time() + delay, data))
    finally:
        queue.put_nowait((0, None))
        try:
            await task
        except (ConnectionError, OSError):
            pass


def nodelay(writer):
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


async def main():
    delay, n, base, port = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

    def handler(i):
        async def handle(cr, cw):
            try:
                sr, sw = await asyncio.open_connection(f"127.0.0.{i}", port)
            except OSError:
                cw.close()
                return
            nodelay(cw)
            nodelay(sw)
            await asyncio.gather(pump(cr, sw, delay), pump(sr, cw, delay), return_exceptions=True)

        return handle

    servers = [await asyncio.start_server(handler(i), "127.0.0.1", base + i) for i in range(1, n + 1)]
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    asyncio.run(main())
