<?php
/*
 * webhook-receiver.php - an example receiver of asyncexec's completion
 * notifications in plain PHP (no composer, PHP 8.2 or later).
 *
 * asyncexec POSTs one notification when an execution of a tenant that has a
 * webhook endpoint ends. It follows the Standard Webhooks specification
 * (https://www.standardwebhooks.com): the body is JSON,
 *
 *   {"type":"execution.completed","timestamp":"2026-01-31T12:00:00Z",
 *    "data":{"environment":"prod","service":"shop","operation":"order",
 *            "correlationId":"...","status":"completed","completedAt":"...",
 *            "statusUrl":"/v1/executions/prod/shop/order/..."}}
 *
 * and three headers prove where it comes from:
 *
 *   webhook-id         the notification's id: the same on every retry of it
 *   webhook-timestamp  when it was signed, in Unix seconds
 *   webhook-signature  "v1," and the base64 of HMAC-SHA256 over
 *                      "{webhook-id}.{webhook-timestamp}.{body}", keyed with the
 *                      bytes of your endpoint's secret; while a secret is being
 *                      rotated, one such value per secret, separated by spaces
 *
 * The secret is the text "whsec_..." that your asyncexec operator gave you
 * for the endpoint: "whsec_" and the base64 of the key bytes. Keep it out of
 * the document root and of version control.
 *
 * The notification only says that something ended: fetch the result from
 * statusUrl, a path relative to the API's host (as the submit's 202 gave
 * it), as you would poll (asyncexec-api(7)).
 *
 * Install: put this file where your web server runs PHP (nginx + PHP-FPM, or
 * Apache), e.g. as https://shop.example.com/hooks/asyncexec, and give it the
 * environment (PHP-FPM: env[...] in the pool; Apache: SetEnv):
 *
 *   ASYNCEXEC_WEBHOOK_SECRET    the secret, whsec_...; during a rotation the
 *                               old and the new one, separated by a space
 *   ASYNCEXEC_WEBHOOK_LOG       a file to append each event to, one JSON line
 *                               (default: PHP's error_log)
 *   ASYNCEXEC_WEBHOOK_SEEN_DIR  where the ids already handled are remembered
 *                               (default: the temporary directory's
 *                               asyncexec-webhook-seen); made with mode 0700
 *                               if missing, and refused (500, and why in
 *                               the log) unless it is a directory of the
 *                               user PHP runs as that no one else may enter
 *
 * It needs PHP's posix extension (Debian: part of php-cli).
 *
 * Try it: ASYNCEXEC_WEBHOOK_SECRET=whsec_... php -S 127.0.0.1:8000 webhook-receiver.php
 *
 * Answers: 204 accepted (also for a notification already handled); 400 a
 * request that is not a notification (headers missing, a body that is not a
 * JSON object); 401 a signature that does not match or a timestamp outside
 * the tolerance; 405 not a POST; 413 a body over MAX_BODY; 500 not configured
 * or the event could not be stored (asyncexec retries it later). Any answer but
 * 2xx makes the sender retry, with backoff, until it gives up: refuse only what
 * a retry cannot fix, and the body is a short plain reason for your logs.
 */

declare(strict_types=1);

/*
 * The Standard Webhooks tolerance: a notification signed more than 5 minutes
 * ago (or ahead) is refused, so that one captured on the way cannot be
 * replayed later. Keep the host's clock synchronised (NTP).
 */
const TOLERANCE_SECONDS = 300;
/* Notifications are small; refuse anything bigger before hashing it. */
const MAX_BODY = 1 << 20;

/* Ends the request with a status and a short plain reason. */
function answer(int $status, string $reason = ''): never
{
	http_response_code($status);
	ini_set('default_mimetype', '');	/* no text/html on a 204 */
	if ($status === 405)
		header('Allow: POST');
	if ($reason !== '') {
		header('Content-Type: text/plain; charset=utf-8');
		echo $reason, "\n";
	}
	exit;
}

/*
 * The key bytes of each secret in ASYNCEXEC_WEBHOOK_SECRET (space-separated
 * whsec_ texts), or null when it is unset or one is not a secret.
 */
function secret_keys(): ?array
{
	$keys = [];
	foreach (preg_split('/\s+/', trim((string)getenv('ASYNCEXEC_WEBHOOK_SECRET')), -1,
	    PREG_SPLIT_NO_EMPTY) as $s) {
		$key = str_starts_with($s, 'whsec_') ?
		    base64_decode(substr($s, 6), true) : false;
		if ($key === false || $key === '')
			return null;
		$keys[] = $key;
	}
	return $keys === [] ? null : $keys;
}

/*
 * Whether one of the v1 signatures of the header matches the body under one
 * of the keys. Entries of another version ("v1a,...") are skipped, not
 * refused: a sender may add them one day.
 */
function signature_ok(array $keys, string $id, string $ts, string $body,
    string $header): bool
{
	foreach ($keys as $key) {
		/* the body exactly as received: never a re-encoded json_decode() */
		$want = base64_encode(hash_hmac('sha256', "$id.$ts.$body", $key, true));
		foreach (explode(' ', $header) as $entry) {
			/*
			 * hash_equals, never === or strcmp: those stop at the first
			 * different byte, and how long they took tells an attacker how
			 * much of a forged signature was right.
			 */
			if (str_starts_with($entry, 'v1,') &&
			    hash_equals($want, substr($entry, 3)))
				return true;
		}
	}
	return false;
}

/*
 * Whether webhook-id $id was handled before: true or false; null when the
 * directory of the markers is not usable (logged). Delivery is at-least-once:
 * when your 204 is lost or slow, the same notification comes again, with the
 * same webhook-id. A database is the better place (a UNIQUE key on the id,
 * inserted in the transaction that stores the event); here one file per id,
 * written after the event is stored (mark_seen): a crash between the two
 * stores the event again on the retry, never loses it, and two deliveries of
 * one id at the same moment may both store it. Remove the files older than
 * the sender's retry window (days) from cron.
 */
function seen_before(string $id): ?bool
{
	if (seen_dir_checked() === null)
		return null;
	return file_exists(seen_file($id));
}

/* Remembers $id as handled (the event is stored); false when it cannot. */
function mark_seen(string $id): bool
{
	return @touch(seen_file($id));
}

/*
 * The markers' directory, made with mode 0700 when it is missing, or null
 * (and why in the log) when it is not a directory (a link is not one) of the
 * user PHP runs as, or group or others may enter it: in the shared temporary
 * directory another local user can make the default path first, and whoever
 * writes in it can have events answered 204 and never stored.
 */
function seen_dir_checked(): ?string
{
	$dir = seen_dir();
	if (!@mkdir($dir, 0700, true) && !is_dir($dir))
		$why = 'cannot be made';
	elseif (($st = @lstat($dir)) === false || ($st['mode'] & 0170000) !== 0040000)
		$why = 'is not a directory';
	elseif ($st['uid'] !== posix_geteuid())
		$why = sprintf('is owned by uid %d, not by uid %d that PHP runs as',
		    $st['uid'], posix_geteuid());
	elseif (($st['mode'] & 0077) !== 0)
		$why = sprintf('has mode %o: group or others may use it (chmod 700)',
		    $st['mode'] & 0777);
	else
		return $dir;
	error_log("webhook-receiver.php: the seen-id directory $dir $why");
	return null;
}

function seen_dir(): string
{
	return getenv('ASYNCEXEC_WEBHOOK_SEEN_DIR') ?:
	    sys_get_temp_dir() . '/asyncexec-webhook-seen';
}

/* The marker of an id: hashed, as the id is the sender's text, never a path. */
function seen_file(string $id): string
{
	return seen_dir() . '/' . hash('sha256', $id);
}

/*
 * Hands the event on: one JSON line appended to ASYNCEXEC_WEBHOOK_LOG (or
 * PHP's error_log). Whatever the event sets off (fetching the result,
 * e-mails, the order's state) belongs to another process that reads from
 * here or from your queue table. Answer at once: the sender gives an
 * attempt webhook_timeout seconds (15 by default, asyncexec.conf(5)), then
 * counts it as failed and sends the notification again later.
 * (Under PHP-FPM, fastcgi_finish_request() sends the answer first and lets
 * the script go on; still, a job queue survives a crash, a script does not.)
 * Whether it was stored.
 */
function hand_on(string $id, string $ts, stdClass $event): bool
{
	$line = json_encode(['webhookId' => $id, 'webhookTimestamp' => (int)$ts,
	    'receivedAt' => time(), 'event' => $event],
	    JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
	$log = getenv('ASYNCEXEC_WEBHOOK_LOG');
	if ($log === false || $log === '')
		return error_log('asyncexec webhook: ' . $line);
	/* LOCK_EX: two requests at once never interleave their lines */
	return file_put_contents($log, $line . "\n", FILE_APPEND | LOCK_EX) !== false;
}

/* ---- the request ---------------------------------------------------------- */

if (($_SERVER['REQUEST_METHOD'] ?? '') !== 'POST')
	answer(405, 'POST only');
if (($keys = secret_keys()) === null) {
	/* fail closed: without a secret nothing can be trusted */
	error_log('webhook-receiver.php: ASYNCEXEC_WEBHOOK_SECRET is unset or not '
	    . 'whsec_ and base64');
	answer(500, 'not configured');
}
$id = $_SERVER['HTTP_WEBHOOK_ID'] ?? '';
$ts = $_SERVER['HTTP_WEBHOOK_TIMESTAMP'] ?? '';
$sig = $_SERVER['HTTP_WEBHOOK_SIGNATURE'] ?? '';
if ($id === '' || $ts === '' || $sig === '')
	answer(400, 'missing webhook-id, webhook-timestamp or webhook-signature');
if (!ctype_digit($ts) || strlen($ts) > 12)
	answer(400, 'webhook-timestamp is not Unix seconds');
/* the clock first: cheaper than the HMAC, and a replay fails here */
if (abs(time() - (int)$ts) > TOLERANCE_SECONDS)
	answer(401, 'webhook-timestamp outside the tolerance');

$body = file_get_contents('php://input', false, null, 0, MAX_BODY + 1);
if ($body === false || strlen($body) > MAX_BODY)
	answer(413, 'body too large');
if (!signature_ok($keys, $id, $ts, $body, $sig))
	answer(401, 'no matching signature');

/*
 * Only a signed body is parsed. As objects, not arrays: an empty {} stays one
 * when the event is encoded again below.
 */
try {
	$event = json_decode($body, false, 64, JSON_THROW_ON_ERROR);
} catch (JsonException $e) {
	answer(400, 'body is not JSON');
}
if (!($event instanceof stdClass) || !is_string($event->type ?? null))
	answer(400, 'body is not a notification');

$seen = seen_before($id);
if ($seen === null)
	answer(500, 'the seen-id directory is refused (see the log)');
if ($seen)
	answer(204);	/* handled before: acknowledge it again, do nothing */
/* stored first, marked after: a crash between costs a duplicate, not a loss */
if (!hand_on($id, $ts, $event))
	answer(500, 'cannot store the event');
if (!mark_seen($id))
	error_log("webhook-receiver.php: cannot mark $id as seen in " . seen_dir());
answer(204);
