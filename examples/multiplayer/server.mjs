// npm run example:multiplayer — serves the multiplayer example on 127.0.0.1 and prints its URL.
// Open it in several tabs: each is a client whose world is a replica of the server's.
//   PORT=n to insist on a port (default 8090, or the next free one)
import { startArena } from './arena.mjs';

const requested = process.env.PORT;
const ports = requested ? [Number(requested)] : Array.from({ length: 20 }, (_, i) => 8090 + i);
for (const port of ports) {
    try {
        const arena = await startArena({ port });
        console.log(`tessera multiplayer example: ${arena.url}examples/multiplayer/`);
        console.log('(open it in several tabs; Ctrl-C to stop)');
        setInterval(() => {
            console.log(`${arena.stats.clients} client(s), ${(arena.stats.bytesSent / 1024).toFixed(1)} KiB sent so far`);
        }, 5000).unref();
        break;
    } catch (error) {
        if (error.code !== 'EADDRINUSE' || port === ports.at(-1)) {
            console.error(`tessera: cannot serve on 127.0.0.1:${port}: ${error.message}`);
            process.exit(1);
        }
    }
}
