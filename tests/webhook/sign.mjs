// sign.mjs - the webhook-signature value as the npm package standardwebhooks
// computes it (Webhook.sign), the counterpart of webhook_sign_tool:
//
//   node sign.mjs SECRET MSG_ID TIMESTAMP BODY_FILE
//
// SECRET is whsec_..., TIMESTAMP Unix seconds, BODY_FILE the body as sent.
// Prints "v1,BASE64" and a newline. Run it where `npm ci` installed the
// package (tests/webhook/webhook_env.py copies it there).
import { readFileSync } from "node:fs";
import { Webhook } from "standardwebhooks";

const [secret, id, ts, file] = process.argv.slice(2);
if (file === undefined || !/^\d+$/.test(ts)) {
	process.stderr.write("usage: node sign.mjs SECRET MSG_ID TIMESTAMP BODY_FILE\n");
	process.exit(2);
}
const body = readFileSync(file);	// a Buffer: signed as its UTF-8 text
const sig = new Webhook(secret).sign(id, new Date(Number(ts) * 1000), body);
process.stdout.write(sig + "\n");
