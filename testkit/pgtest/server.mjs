// server.mjs serves PGlite (Postgres 17.5 in WebAssembly) with pgvector on a
// loopback TCP port, one connection at a time, for choir's tests:
//
//   node server.mjs [--host=127.0.0.1] [--port=0] [--db=memory://|DIR]
//
// It prints `PGLiteSocketServer listening on {"port":N,"host":"..."}` when it
// accepts connections, and stops on SIGTERM or SIGINT.
//
// It is pglite-socket's own dist/scripts/server.js (-e vector -m 1) with one
// fix: pglite-socket 0.0.22 frees a connection's slot only when the
// connection closes cleanly. One that fails instead (the client resets it,
// as the kernel does when a process dies with unread data) keeps the only
// slot taken, and every later connection is refused until restart. Here the
// slots of connections that are gone are freed before each new connection.
import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite/vector";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import { parseArgs } from "node:util";

const { values: opts } = parseArgs({
  options: {
    host: { type: "string", default: "127.0.0.1" },
    port: { type: "string", default: "0" },
    db: { type: "string", default: "memory://" },
  },
});

const db = new PGlite(opts.db, { extensions: { vector } });
await db.waitReady;

const server = new PGLiteSocketServer({
  db,
  host: opts.host,
  port: Number(opts.port),
  maxConnections: 1,
});
const handleConnection = server.handleConnection.bind(server);
server.handleConnection = (socket) => {
  for (const h of server.handlers) {
    if (!h.isAttached) server.handlers.delete(h);
  }
  return handleConnection(socket);
};
server.addEventListener("listening", (e) => {
  console.log(`PGLiteSocketServer listening on ${JSON.stringify(e.detail)}`);
});
server.addEventListener("error", (e) => {
  console.error("PGLiteSocketServer error:", e.detail);
});

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await server.stop();
  await db.close();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

await server.start();
