#!/usr/bin/env python3
"""webhook_receiver.py - the loopback webhook receiver of scripts/bench.sh --webhooks.

  webhook_receiver.py --port-file FILE --out RECORDS

Listens on 127.0.0.1 (a free port, written to FILE once it listens), answers every POST
with 204 at once (HTTP/1.1 keep-alive, as asyncexec-notify's libcurl reuses connections)
and appends one JSON line per POST to RECORDS: {"at": arrival time in ms since the epoch
(time.time(), the clock MariaDB's completed_at comes from; taken when the whole request
has been read), "id": the webhook-id header, "body": the body as text}. Nothing is
verified or parsed beyond the head: the arithmetic is scripts/lib/bench_webhooks.py's.
GET /count answers the number of POSTs so far (RECORDS flushed first). SIGTERM or SIGINT:
RECORDS flushed, exit 0. One asyncio loop, no threads, to keep its CPU small: it is
measured separately from the service's processes (the bench's receiver_us).
"""
import argparse
import asyncio
import json
import os
import signal
import time

MAX_HEAD = 64 * 1024
MAX_BODY = 1 << 20


class Receiver:
    def __init__(self, out):
        self.out = open(out, 'a', encoding='utf-8', buffering=1 << 20)
        self.count = 0

    def record(self, at, wid, body):
        self.out.write(json.dumps({'at': round(at, 3), 'id': wid,
                                   'body': body.decode('utf-8', 'replace')}) + '\n')
        self.count += 1

    async def serve(self, reader, writer):
        try:
            while True:
                try:
                    head = await reader.readuntil(b'\r\n\r\n')
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                        ConnectionError):
                    return
                lines = head.decode('latin-1').split('\r\n')
                method, _, rest = lines[0].partition(' ')
                path = rest.partition(' ')[0]
                hdrs = {}
                for line in lines[1:]:
                    k, sep, v = line.partition(':')
                    if sep:
                        hdrs[k.strip().lower()] = v.strip()
                n = int(hdrs.get('content-length', '0') or 0)
                if n < 0 or n > MAX_BODY:
                    return
                body = await reader.readexactly(n) if n else b''
                if method == 'POST':
                    self.record(time.time() * 1000, hdrs.get('webhook-id', ''), body)
                    writer.write(b'HTTP/1.1 204 No Content\r\n\r\n')
                elif method == 'GET' and path == '/count':
                    self.out.flush()
                    text = b'%d\n' % self.count
                    writer.write(b'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n'
                                 b'Content-Length: %d\r\n\r\n%s' % (len(text), text))
                else:
                    writer.write(b'HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n')
                await writer.drain()
                if hdrs.get('connection', '').lower() == 'close':
                    return
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            return
        finally:
            writer.close()


async def main(args):
    rx = Receiver(args.out)
    server = await asyncio.start_server(rx.serve, '127.0.0.1', 0, limit=MAX_HEAD,
                                        backlog=256)
    port = server.sockets[0].getsockname()[1]
    tmp = args.port_file + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        f.write('%d\n' % port)
    os.replace(tmp, args.port_file)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()
    rx.out.flush()
    rx.out.close()


if __name__ == '__main__':
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--port-file', required=True)
    p.add_argument('--out', required=True)
    asyncio.run(main(p.parse_args()))
