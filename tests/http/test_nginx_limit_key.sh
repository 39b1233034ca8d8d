#!/usr/bin/env bash
# test_nginx_limit_key.sh — the per-client key of nginx/asyncexec.conf's rate limit, with the
# real nginx (issue 16): an IPv6 client is one /64 (a host that owns a /64 cannot get a
# fresh budget by changing address), an IPv4 client one address, loopback exempt.
#
# The shipped file is rendered as scripts/lib/stack.sh does (listen ports, log path) into a
# throwaway nginx on loopback with one probe server more, whose realip module takes the
# client address from the X-Probe-Addr header (loopback only has 127.0.0.0/8 and ::1):
#   /key      answers the limit key of that address ($asyncexec_limit_key, as hex here);
#   /limited  is limited by the shipped zone (200 r/s, burst 400, nodelay), as the API is.
# Checks: two addresses of one /64 have one key of 8 bytes, another /64 another key;
# IPv4: the 4 bytes of the address; a v4-mapped IPv6 address its own 16 bytes (never the
# all-zero /64 of ::ffff:0:0/96, which every such client would share); 127.0.0.1 and ::1
# none; 1200 requests from 1200 addresses of one /64 get 429 past the burst, 1200 from
# 1200 IPv4 addresses none. Needs nginx and curl only (no stack). Prints "N passed, N failed".
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CONF=$HERE/../../nginx/asyncexec.conf
TMP=$(mktemp -d /tmp/test-nginx-limit.XXXXXX)
chmod 0755 "$TMP"
cleanup() {
    [[ -s $TMP/nginx.pid ]] && kill "$(cat "$TMP/nginx.pid")" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

passed=0 failed=0
check() {   # check DESCRIPTION WANT GOT
    if [[ $2 == "$3" ]]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        printf 'FAILED: %s: want "%s", got "%s"\n' "$1" "$2" "$3" >&2
    fi
}

# free_port — a TCP port on 127.0.0.1 that nothing listens on.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

api=$(free_port) metrics=$(free_port) probe=$(free_port)
sed -e "s|^\([[:space:]]*\)listen 80;|\1listen 127.0.0.1:$api;|" \
    -e "s|^\([[:space:]]*\)listen 127.0.0.1:9180;|\1listen 127.0.0.1:$metrics;|" \
    -e "s|/var/log/nginx/asyncexec.access.log|$TMP/access.log|" \
    -e "s|unix:/run/asyncexec/asyncexec.sock|unix:$TMP/none.sock|g" "$CONF" >"$TMP/site.conf"
cat >"$TMP/nginx.conf" <<EOF
pid $TMP/nginx.pid;
error_log $TMP/error.log warn;
worker_processes 1;
events { worker_connections 256; }
http {
    include /etc/nginx/mime.types;
    access_log off;
    client_body_temp_path $TMP/client_body;
    fastcgi_temp_path $TMP/fastcgi;
    proxy_temp_path $TMP/proxy;
    uwsgi_temp_path $TMP/uwsgi;
    scgi_temp_path $TMP/scgi;
    include $TMP/site.conf;
    server {
        listen 127.0.0.1:$probe;
        set_real_ip_from 127.0.0.1;
        real_ip_header X-Probe-Addr;
        limit_req_status 429;
        location = /key {
            default_type application/octet-stream;
            return 200 "\$asyncexec_limit_key";
        }
        # try_files, not return: return ends the request in the rewrite phase, before
        # limit_req (preaccess) runs
        location = /limited {
            limit_req zone=asyncexec burst=400 nodelay;
            root $TMP;
            try_files /nothing =204;
        }
    }
}
EOF
if ! nginx -t -q -p "$TMP/" -c "$TMP/nginx.conf" || ! nginx -p "$TMP/" -c "$TMP/nginx.conf"; then
    echo "FAILED: nginx did not start with the rendered nginx/asyncexec.conf" >&2
    exit 1
fi
for i in $(seq 1 50); do
    curl -s -o /dev/null "http://127.0.0.1:$probe/key" && break
    sleep 0.1
done

# key ADDRESS — the limit key nginx computes for a client at ADDRESS, as hex (empty: none).
key() {
    curl -s -H "X-Probe-Addr: $1" "http://127.0.0.1:$probe/key" | od -An -tx1 | tr -d ' \n'
}

check "2001:db8:1:2::1 is keyed on its /64" 20010db800010002 "$(key 2001:db8:1:2::1)"
check "another address of the same /64, the same key" 20010db800010002 \
    "$(key 2001:db8:1:2:ffff:ffff:ffff:fffe)"
check "another /64, another key" 20010db800010003 "$(key 2001:db8:1:3::1)"
check "2001:db8:: (zero bytes in the prefix)" 20010db800000000 "$(key 2001:db8::7)"
check "IPv4: the whole address" c6336407 "$(key 198.51.100.7)"
check "IPv4: the neighbour has its own" c6336408 "$(key 198.51.100.8)"
check "a v4-mapped IPv6 address: all of it" 00000000000000000000ffffc6336407 \
    "$(key ::ffff:198.51.100.7)"
check "127.0.0.1 is exempt" "" "$(key 127.0.0.1)"
check "::1 is exempt" "" "$(key ::1)"

# addr KIND I — the I-th client address of KIND: v6 (one /64), v4 (many), v4one (one).
addr() {
    case $1 in
    v6) printf '2001:db8:9:9::%x' "$2" ;;
    v4) printf '198.51.%d.%d' $(($2 / 250)) $(($2 % 250 + 1)) ;;
    v4one) printf '203.0.113.5' ;;
    esac
}

# burst KIND — the number of 429s for 1200 requests from addresses of KIND (addr), one
# curl process (one connection), as fast as it goes: past the burst (400) at 200 r/s, a
# client outrunning 200 r/s gets 429s, unless each address has a budget of its own.
burst() {
    local i
    for i in $(seq 1 1200); do
        ((i == 1)) || printf 'next\n'
        printf 'url = "http://127.0.0.1:%s/limited"\nheader = "X-Probe-Addr: %s"\noutput = /dev/null\nwrite-out = "%%{http_code}\\n"\n' \
            "$probe" "$(addr "$1" "$i")"
    done >"$TMP/burst.curl"
    curl -s -K "$TMP/burst.curl" | grep -c '^429$'
}

n=$(burst v6)
check "1200 addresses of one /64: 429 past the burst" yes "$( ((n >= 1)) && echo yes || echo "no ($n)")"
n=$(burst v4)
check "1200 IPv4 addresses: none limited" 0 "$n"
n=$(burst v4one)
check "1200 requests from one IPv4 address: 429 past the burst" yes \
    "$( ((n >= 1)) && echo yes || echo "no ($n)")"

printf '%d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
