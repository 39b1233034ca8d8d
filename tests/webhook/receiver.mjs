// receiver.mjs - a Standard Webhooks receiver for the tests: verifies every
// request with the npm package standardwebhooks (pinned in package.json) and
// logs it; the path chooses the answer, so one receiver serves every fault case.
//
//   node receiver.mjs --port N --secret whsec_... --log FILE [--ready FILE]
//
// Listens on 127.0.0.1:N (0: any free port). Once listening it writes the port
// to the ready file (written whole, then renamed into place: a reader never
// sees a part). Every request appends one JSON line to the log, before it is
// answered:
//   {path, webhookId, timestamp, signature, verified, error, body, receivedAt}
// (path with its query; the three headers as sent, or null; verified true or
// false, error the verifier's message or null: the package also refuses a
// signed body that is not JSON; body as a string; receivedAt in ms since the
// epoch).
//
// Answers, by path:
//   /ok                 204
//   /status/NNN         NNN (200..599); with ?retry_after=S on 429 and 503,
//                       also Retry-After: S
//   /redirect           302 to /ok
//   /slow?ms=N          204 after N ms
//   /hang               never answers (the socket stays open)
//   /reset              destroys the socket without answering
//   /big                200 with a 1 MiB body
//   /flaky?fail=K       500 to the first K requests of each webhook-id, then 204
//   anything else       404
// The answer does not depend on the verification: the tests read that in the log.
// SIGTERM (or SIGINT) closes every connection and exits 0.
//
// The package is resolved from node_modules next to this file: run it from a
// directory where `npm ci` installed package-lock.json (tests/webhook/
// webhook_env.py copies both there).
import { appendFileSync, renameSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { Webhook } from "standardwebhooks";

function usage(why) {
	process.stderr.write(`receiver.mjs: ${why}\nusage: node receiver.mjs ` +
	    "--port N --secret whsec_... --log FILE [--ready FILE]\n");
	process.exit(2);
}

// The options: {port, secret, log, ready}.
function parseArgs(argv) {
	const o = { port: null, secret: null, log: null, ready: null };
	for (let i = 0; i < argv.length; i += 2) {
		const k = argv[i].replace(/^--/, "");
		if (!(k in o) || argv[i + 1] === undefined)
			usage(`bad argument ${argv[i]}`);
		o[k] = argv[i + 1];
	}
	if (o.port === null || o.secret === null || o.log === null)
		usage("--port, --secret and --log are required");
	if (!/^\d+$/.test(o.port) || Number(o.port) > 65535)
		usage("--port must be 0..65535");
	o.port = Number(o.port);
	return o;
}

const opt = parseArgs(process.argv.slice(2));
let wh;
try {
	wh = new Webhook(opt.secret);
} catch (e) {
	usage(`bad secret: ${e.message}`);
}
const failures = new Map();	// /flaky: webhook-id -> 500s answered so far
const BIG = Buffer.alloc(1 << 20, "x");

// {verified, error} of a request's body (a Buffer) and headers.
function verify(body, headers) {
	try {
		wh.verify(body, headers);
		return { verified: true, error: null };
	} catch (e) {
		return { verified: false, error: String(e.message || e) };
	}
}

// Appends the log line of one request.
function record(req, body) {
	const h = req.headers;
	appendFileSync(opt.log, JSON.stringify({
		path: req.url,
		webhookId: h["webhook-id"] ?? null,
		timestamp: h["webhook-timestamp"] ?? null,
		signature: h["webhook-signature"] ?? null,
		...verify(body, h),
		body: body.toString("utf8"),
		receivedAt: Date.now(),
	}) + "\n");
}

// Answers req (its body read) as its path says.
function answer(req, res) {
	const u = new URL(req.url, "http://receiver");
	const q = u.searchParams;
	let m;
	if (u.pathname === "/ok") {
		res.writeHead(204).end();
	} else if ((m = /^\/status\/(\d{3})$/.exec(u.pathname)) &&
	    m[1] >= 200 && m[1] <= 599) {
		const hdr = {};
		if ((m[1] === "429" || m[1] === "503") && q.has("retry_after"))
			hdr["Retry-After"] = q.get("retry_after");
		res.writeHead(Number(m[1]), hdr).end();
	} else if (u.pathname === "/redirect") {
		res.writeHead(302, { Location: "/ok" }).end();
	} else if (u.pathname === "/slow") {
		setTimeout(() => res.writeHead(204).end(), Number(q.get("ms")) || 0);
	} else if (u.pathname === "/hang") {
		// nothing: the connection stays open until the client or SIGTERM ends it
	} else if (u.pathname === "/reset") {
		req.socket.destroy();
	} else if (u.pathname === "/big") {
		res.writeHead(200, { "Content-Type": "text/plain" }).end(BIG);
	} else if (u.pathname === "/flaky") {
		const id = req.headers["webhook-id"] ?? "";
		const n = failures.get(id) ?? 0;
		if (n < (Number(q.get("fail")) || 0)) {
			failures.set(id, n + 1);
			res.writeHead(500).end();
		} else
			res.writeHead(204).end();
	} else {
		res.writeHead(404).end();
	}
}

const server = createServer((req, res) => {
	const chunks = [];
	req.on("data", (c) => chunks.push(c));
	req.on("end", () => {
		const body = Buffer.concat(chunks);
		record(req, body);
		answer(req, res);
	});
});

server.listen(opt.port, "127.0.0.1", () => {
	if (opt.ready !== null) {
		writeFileSync(`${opt.ready}.tmp`, `${server.address().port}\n`);
		renameSync(`${opt.ready}.tmp`, opt.ready);
	}
});
server.on("error", (e) => {
	process.stderr.write(`receiver.mjs: ${e.message}\n`);
	process.exit(1);
});

function stop() {
	server.close();
	process.exit(0);	// closes every socket, the /hang ones too
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
