<?php
/*
 * consumer.php - an example asyncexec consumer in plain PHP (php-cli + php-curl).
 *
 * Submits one execution, then polls it until it is terminal, the way an integrator
 * should: it chooses its own correlation id (so a submit retried after a lost answer or
 * a 429/503 is recognised as the same execution, never a second one), honours
 * Retry-After on 202, 200, 304, 429 and 503, sends the last ETag back in If-None-Match
 * (an unchanged execution then costs a 304 with no body), and handles every problem
 * code of the API. It can schedule the work (contract v3): --delay sends X-Delay-Seconds
 * (the backend's claim does not get it before then), --priority sends X-Priority (claimed
 * before work of lower priority); a retried submit sends the same headers again, as an
 * identical resubmit must (a delayed submit retried later with the same X-Delay-Seconds
 * is the same execution).
 *
 * usage: php consumer.php [--url URL] [--key KEY] [--cid ID] [--timeout SECONDS]
 *            [--delay SECONDS] [--priority 0-9] ENV/SERVICE/OPERATION [BODY | @FILE]
 *   --url      the API's base URL (default $ASYNCEXEC_URL, else http://127.0.0.1)
 *   --key      the consumer key, ak_... (default $ASYNCEXEC_KEY)
 *   --cid      the correlation id (default a fresh random UUID)
 *   --timeout  give up after this many seconds (default 300)
 *   --delay    X-Delay-Seconds: not started before this many seconds (0..2592000)
 *   --priority X-Priority: 0 (the default) to 9, higher claimed first
 *   BODY       the JSON request (default {}), or @FILE to read it from FILE
 *
 * Prints one line per exchange on stdout ("submit 202 ...", "poll 200 ...",
 * "poll 304 not modified ...", a 200 with its priority and notBefore) and the result at
 * the end ("completed result=...").
 * Exit status: 0 completed; 1 failed, expired or cancelled; 2 usage; 3 unauthorized
 * (401); 4 not found (404 unknown_route; on submit 404 not_found: the URL is wrong, check
 * --url; on poll not_found: the execution is gone or the poll token is no longer valid);
 * 5 conflict (409 correlation_id_conflict: the id was used with
 * another body, key or scheduling headers); 6 the request was refused (400, e.g. a bad
 * --delay or --priority, the detail names the header; 413, 415); 7 timed out (still
 * waiting, or 429 / 503 went on until the timeout); 8 transport or unexpected answer.
 */

const EXIT_COMPLETED = 0, EXIT_TERMINAL = 1, EXIT_USAGE = 2, EXIT_UNAUTHORIZED = 3,
	EXIT_NOT_FOUND = 4, EXIT_CONFLICT = 5, EXIT_REFUSED = 6, EXIT_TIMEOUT = 7,
	EXIT_ERROR = 8;

/* Prints a line on stdout at once (the caller may be following the output). */
function say(string $line): void
{
	fwrite(STDOUT, $line . "\n");
	fflush(STDOUT);
}

function fail(int $code, string $why): never
{
	fwrite(STDERR, "consumer.php: $why\n");
	exit($code);
}

/* The command line: [options, positional arguments]. */
function parse_args(array $argv): array
{
	$o = ['url' => getenv('ASYNCEXEC_URL') ?: 'http://127.0.0.1',
	    'key' => getenv('ASYNCEXEC_KEY') ?: '', 'cid' => null, 'timeout' => 300,
	    'delay' => null, 'priority' => null];
	$pos = [];
	for ($i = 1; $i < count($argv); $i++) {
		$a = $argv[$i];
		if (in_array($a, ['--url', '--key', '--cid', '--timeout', '--delay',
		    '--priority'], true)) {
			if (!isset($argv[$i + 1]))
				fail(EXIT_USAGE, "$a needs a value");
			$o[substr($a, 2)] = $argv[++$i];
		} elseif ($a === '--help' || $a === '-h') {
			say('usage: php consumer.php [--url URL] [--key KEY] [--cid ID] '
			    . '[--timeout SECONDS] [--delay SECONDS] [--priority 0-9] '
			    . 'ENV/SERVICE/OPERATION [BODY | @FILE]');
			exit(0);
		} elseif (str_starts_with($a, '--'))
			fail(EXIT_USAGE, "unknown option $a");
		else
			$pos[] = $a;
	}
	if (count($pos) < 1 || count($pos) > 2 ||
	    !preg_match('#^[a-z0-9][a-z0-9._-]{0,63}(/[a-z0-9][a-z0-9._-]{0,63}){2}$#', $pos[0]))
		fail(EXIT_USAGE, 'usage: consumer.php [options] ENV/SERVICE/OPERATION [BODY | @FILE]');
	if ($o['key'] === '')
		fail(EXIT_USAGE, 'no key: --key or ASYNCEXEC_KEY');
	if (!ctype_digit((string)$o['timeout']))
		fail(EXIT_USAGE, '--timeout must be a number of seconds');
	return [$o, $pos];
}

/* A random (version 4) UUID: the client-chosen correlation id. */
function uuid4(): string
{
	$b = random_bytes(16);
	$b[6] = chr((ord($b[6]) & 0x0f) | 0x40);
	$b[8] = chr((ord($b[8]) & 0x3f) | 0x80);
	return vsprintf('%s%s-%s-%s-%s-%s%s%s', str_split(bin2hex($b), 4));
}

/*
 * One HTTP exchange. Returns ['status' => int (0: transport error), 'headers' =>
 * [lower-case name => value], 'body' => string, 'error' => string].
 */
function http(string $method, string $url, array $headers, ?string $body = null): array
{
	$h = [];
	$c = curl_init($url);
	curl_setopt_array($c, [
		CURLOPT_CUSTOMREQUEST => $method,
		CURLOPT_HTTPHEADER => $headers,
		CURLOPT_RETURNTRANSFER => true,
		CURLOPT_FOLLOWLOCATION => false,
		CURLOPT_CONNECTTIMEOUT => 10,
		CURLOPT_TIMEOUT => 30,
		CURLOPT_HEADERFUNCTION => function ($c, $line) use (&$h) {
			$p = strpos($line, ':');
			if ($p !== false)
				$h[strtolower(trim(substr($line, 0, $p)))] =
				    trim(substr($line, $p + 1));
			return strlen($line);
		},
	]);
	if ($body !== null)
		curl_setopt($c, CURLOPT_POSTFIELDS, $body);
	$out = curl_exec($c);
	$r = ['status' => $out === false ? 0 : curl_getinfo($c, CURLINFO_RESPONSE_CODE),
	    'headers' => $h, 'body' => $out === false ? '' : $out,
	    'error' => curl_error($c)];
	curl_close($c);
	return $r;
}

/* The problem document's code and detail ("" when the body is not one). */
function problem(array $r): array
{
	$p = json_decode($r['body'], true);
	return [is_array($p) ? (string)($p['code'] ?? '') : '',
	    is_array($p) ? (string)($p['detail'] ?? '') : ''];
}

/* Seconds from a Retry-After header (delta-seconds or an HTTP date); $dflt if absent. */
function retry_after(array $r, float $dflt): float
{
	$v = $r['headers']['retry-after'] ?? null;
	if ($v === null)
		return $dflt;
	if (ctype_digit($v))
		return (float)$v;
	$t = strtotime($v);
	return $t === false ? $dflt : max(0.0, (float)($t - time()));
}

/* Sleeps $s seconds (at least 0.1), unless that passes the deadline: then exits 7. */
function wait_or_give_up(float $s, float $deadline, string $what): void
{
	$s = max(0.1, $s);
	if (microtime(true) + $s > $deadline)
		fail(EXIT_TIMEOUT, "timed out ($what)");
	usleep((int)($s * 1e6));
}

/*
 * The answers submit and poll share: exits on the final ones, returns the seconds to
 * wait before trying again on 429 and 503 (and on a transport error).
 */
function problem_or_retry(string $what, array $r): float
{
	[$code, $detail] = problem($r);
	$s = $r['status'];
	say("$what $s " . ($code !== '' ? $code : ($r['error'] ?: 'unexpected')));
	switch (true) {
	case $s === 0:
		return 1.0;			/* transport error: try again */
	case $s === 401:
		fail(EXIT_UNAUTHORIZED, 'the key was refused (401 unauthorized)');
	case $s === 404 && $code === 'unknown_route':
		fail(EXIT_NOT_FOUND, 'no such route, or it is disabled (404 unknown_route)');
	case $s === 404 && $what === 'submit':	/* no such path: not the API's */
		fail(EXIT_NOT_FOUND, "the submit's URL is not the API's (404 "
		    . ($code !== '' ? $code : 'without a problem code')
		    . '): check --url, the base URL without /v1');
	case $s === 404:
		fail(EXIT_NOT_FOUND, 'no such execution for this key and poll token '
		    . '(404 not_found: purged, or the token was replaced by a resubmit)');
	case $s === 409 && $code === 'correlation_id_conflict':
		fail(EXIT_CONFLICT, 'the correlation id is taken by another request '
		    . '(409 correlation_id_conflict)');
	case $s === 400 || $s === 413 || $s === 415:
		fail(EXIT_REFUSED, "the request was refused ($s $code: $detail)");
	case $s === 429:			/* quota_exceeded (or nginx's rate limit) */
	case $s === 503:			/* service_unavailable */
	case $s === 502 || $s === 504:		/* nginx: the application unreachable */
		return retry_after($r, 1.0);
	default:
		fail(EXIT_ERROR, "unexpected answer $s $code: $detail");
	}
}

/*
 * Submits $body on $route as $cid until it is accepted: a 429 or 503 is retried after
 * its Retry-After with the same id, body and scheduling headers (a retry, never a second
 * execution; the server checks the values, a bad one is a 400 naming the header).
 * Returns the 202's body and its Retry-After.
 */
function submit(array $o, string $route, string $cid, string $body, float $deadline): array
{
	$hdr = ['Authorization: Bearer ' . $o['key'], 'Content-Type: application/json',
	    'X-Correlation-Id: ' . $cid, 'Expect:'];
	if ($o['delay'] !== null)
		$hdr[] = 'X-Delay-Seconds: ' . $o['delay'];
	if ($o['priority'] !== null)
		$hdr[] = 'X-Priority: ' . $o['priority'];
	for (;;) {
		$r = http('POST', rtrim($o['url'], '/') . "/v1/executions/$route", $hdr, $body);
		if ($r['status'] === 202) {
			$a = json_decode($r['body'], true);
			if (!is_array($a) || !isset($a['pollToken'], $a['statusUrl']))
				fail(EXIT_ERROR, 'a 202 without pollToken or statusUrl');
			say("submit 202 correlationId={$a['correlationId']} "
			    . "status={$a['status']}");
			return [$a, retry_after($r, 1.0)];
		}
		wait_or_give_up(problem_or_retry('submit', $r), $deadline, 'submit');
	}
}

/* Polls until terminal, with If-None-Match; returns the final status body. */
function poll(array $o, array $a, float $wait, float $deadline): array
{
	$url = rtrim($o['url'], '/') . $a['statusUrl'];
	$etag = null;
	$last = $a;
	for (;;) {
		wait_or_give_up($wait, $deadline, "still {$last['status']}");
		$hdr = ['Authorization: Bearer ' . $o['key'], 'X-Poll-Token: ' . $a['pollToken']];
		if ($etag !== null)
			$hdr[] = 'If-None-Match: ' . $etag;
		$r = http('GET', $url, $hdr);
		if ($r['status'] === 304) {
			say("poll 304 not modified etag=$etag");
			$wait = retry_after($r, $wait);
			continue;
		}
		if ($r['status'] !== 200) {
			$wait = problem_or_retry('poll', $r);
			continue;
		}
		$last = json_decode($r['body'], true);
		if (!is_array($last) || !isset($last['status']))
			fail(EXIT_ERROR, 'a poll 200 without status');
		$last['_body'] = $r['body'];
		$etag = $r['headers']['etag'] ?? null;
		say("poll 200 status={$last['status']} etag=" . ($etag ?? '-')
		    . ' priority=' . ($last['priority'] ?? '-')
		    . ' notBefore=' . ($last['notBefore'] ?? '-'));
		if ($last['status'] !== 'waiting_callback')
			return $last;
		$wait = retry_after($r, 1.0);
	}
}

[$o, $pos] = parse_args($argv);
$body = $pos[1] ?? '{}';
if (str_starts_with($body, '@') && ($body = @file_get_contents(substr($body, 1))) === false)
	fail(EXIT_USAGE, 'cannot read ' . substr($pos[1], 1));
$deadline = microtime(true) + (float)$o['timeout'];
[$accepted, $wait] = submit($o, $pos[0], $o['cid'] ?? uuid4(), $body, $deadline);
$final = poll($o, $accepted, $wait, $deadline);
/* result and error decoded as objects, so {} stays {} (numbers are re-spelled:
 * 19.90 prints as 19.9; asyncexec-api(7)) */
$raw = json_decode($final['_body']);
$json = fn($v) => json_encode($v, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE);
switch ($final['status']) {
case 'completed':
	say('completed result=' . $json($raw->result ?? null));
	exit(EXIT_COMPLETED);
case 'failed':
	say('failed error=' . $json($raw->error ?? null));
	exit(EXIT_TERMINAL);
default:
	say($final['status']);
	exit(EXIT_TERMINAL);
}
