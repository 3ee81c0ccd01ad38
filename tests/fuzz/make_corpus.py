#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses into tests/fuzz/corpus/<harness>/.

Each seed is small and hand-made: a valid input of each form a parser accepts
and the edges next to it (saturation, out-of-range fields, bad escapes). The
layout of an input (a flags byte, separators) is the one each harness's header
comment describes. The crash-* inputs are those fuzzing found, reduced, kept
as regressions. Run it again after editing an input here.

    python3 tests/fuzz/make_corpus.py
"""
from __future__ import annotations

import hashlib
import json
import pathlib
import struct

CORPUS = pathlib.Path(__file__).resolve().parent / "corpus"
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "config"

DEFAULT_NOW = b"\x00"  # flags byte 0: now = 2024-01-01T00:00:00Z


def now_ns(ns: int) -> bytes:
    """Flags byte 1 and an explicit `now` (little-endian int64 nanoseconds)."""
    return b"\x01" + struct.pack("<q", ns)


DATES = [
    b"Sun, 06 Nov 1994 08:49:37 GMT",
    b"Sunday, 06-Nov-94 08:49:37 GMT",
    b"Sun Nov  6 08:49:37 1994",
    b"Sun Nov 06 08:49:37 1994",
    b"Thu, 29 Feb 2024 23:59:60 GMT",  # leap day and leap second
    b"Fri, 31 Dec 9999 23:59:59 GMT",  # saturates high
    b"Sat, 01 Jan 0000 00:00:00 GMT",  # saturates low
    b"Mon, 30 Feb 2023 00:00:00 GMT",  # no such day
    b"Tue, 06 Nov 1994 24:00:00 GMT",  # no such hour
    b"Wednesday, 01-Jan-00 00:00:00 GMT",
    b"Sun, 06 Nov 1994 08:49:37 GMT ",
    b"sun, 06 nov 1994 08:49:37 gmt",
    # The lenient forms (mulligan/retry/retry_after.h, ParseLenientHttpDate).
    b"Sun, 06 Nov 1994 08:49:37 UTC",
    b"Sun, 06 Nov 1994 09:49:37 +0100",
    b"Sat, 05 Nov 1994 09:20:37 -2329",
    b"Sun, 6 Nov 1994 08:49 Z",
    b"06-Nov-1994  08:49:37\tUT",
    b"Sun 06 Nov 94 08:49:37 GMT",
    b"sun nov 6 08:49:37 1994",
    b"Fri, 11 Apr 2262 23:00:00 -2359",  # saturates high through the offset
    b"Sun, 06 Nov 1994 08:49:37 EST",  # refused
]

SEEDS: dict[str, list[bytes]] = {
    "fuzz_retry_after": [
        DEFAULT_NOW + b"120",
        DEFAULT_NOW + b"0",
        DEFAULT_NOW + b" \t5\t ",
        DEFAULT_NOW + b"9223372036",
        DEFAULT_NOW + b"9223372037",
        DEFAULT_NOW + b"99999999999999999999999999999999",
        DEFAULT_NOW + b"-5",
        DEFAULT_NOW + b"0.5",
        DEFAULT_NOW + b"1m0s",
        DEFAULT_NOW + b"",
        *(DEFAULT_NOW + d for d in DATES),
        now_ns(-(2**63)) + b"Fri, 31 Dec 9999 23:59:59 GMT",
        now_ns(2**63 - 1) + b"Sat, 01 Jan 0000 00:00:00 GMT",
        now_ns(784111777 * 10**9) + b"Sun, 06 Nov 1994 08:49:37 GMT",
    ],
    "fuzz_http_date": [
        *(DEFAULT_NOW + d for d in DATES),
        now_ns(2**62) + b"Sunday, 06-Nov-94 08:49:37 GMT",  # now in 2116
        now_ns(-(2**62)) + b"Sunday, 06-Nov-94 08:49:37 GMT",  # now in 1823
        b"\x02" + struct.pack("<Q", 784111777),  # generate mode
        b"\x03" + struct.pack("<q", 2**62) + struct.pack("<Q", 2**63),
    ],
    "fuzz_idempotency_key": [
        b"\xfe" + b"3f1c9a2e-5b7d-4c1e-9f0a-2b3c4d5e6f70",
        b"\xfe" + b'"3f1c9a2e-5b7d-4c1e-9f0a-2b3c4d5e6f70"',
        b"\xfe" + b' \t"a \\"quoted\\" \\\\ key"\t ',
        b"\xfe" + b'"unterminated',
        b"\xfe" + b'"bad \\n escape"',
        b"\xfe" + b'"trailing" x',
        b"\xfe" + b'""',
        b"\xfe" + b"",
        b"\xfe" + b"caf\xc3\xa9",
        b"\x03" + b"abcde",  # longer than max_length 4
        b"\x03" + b'"ab\\"c"',  # 4 bytes unquoted
        b"\x00" + b"x",
    ],
    "fuzz_idempotency_store": [
        # options: max_entries, max_bytes/256, shards, lease s, ttl s, retry_after s
        bytes([3, 8, 1, 4, 8, 1])
        # Reserve(scope alice, "k1", print 1), Complete(lease 0, 201, no fields)
        + b"\x00\x01\x02k1\x01" + b"\x01\x01\x01\x32\x00\x01"
        # Reserve the same key again: replay; then with the other print: 422
        + b"\x05\x01\x01" + b"\x05\x01\x00",
        bytes([2, 1, 2, 2, 2, 3])
        # Reserve twice (in flight), advance past the lease, reserve again
        + b"\x00\x00\x01ab\x01" + b"\x05\x00\x01" + b"\x03\xff" + b"\x05\x00\x01"
        # Release, complete with an invalid field name, sweep
        + b"\x02\x01" + b"\x01\x01\x00" + b"\x00\x01\x02a b\x01v" + b"\x04",
        bytes([1, 0, 4, 1, 1, 0]) + b"\x00\x02\x03xyz\x00" + b"\x00\x02\x03xyw\x00",
        bytes([16, 255, 4, 16, 16, 3])
        + b"\x00\x00\x08too-long!\x01"  # 9 bytes > max_key_length 8
        + b"\x00\x00\x02\x7f\x01\x01"  # not printable
        + b"\x00\x00\x04okay\x01" + b"\x01\x01\x00\x01\x01\x01\x04Name\x03a\rb\x10",
    ],
    "fuzz_config": [
        (EXAMPLES / "mulligan.json").read_bytes(),
        b"{}",
        b'{"version": 1, "policies": {"a": {"max_attempts": 4, "base_delay": 0}}}'
        b"\x00MULLIGAN_POLICY_A_MAX_ATTEMPTS=2\x00MULLIGAN_POLICY_A_DEADLINE=none",
        b'{"policies": {"a": {"backoff": "decorrelated", "base_delay": "1h",'
        b' "max_delay": "9199999999s", "deadline": "1ns", "jitter": "proportional",'
        b' "jitter_fraction": 1, "multiplier": 1e300}}}',
        b'{"breakers": {"b": {"window": "time", "window_duration": "1ns",'
        b' "window_buckets": 3600, "slow_call_duration": "1us",'
        b' "reset_timeout_multiplier": 1e300, "max_reset_timeout": "9e9s"}}}',
        b'{"clients": {"c": {"policy": "missing"}}, "policies": {"x": 1}}',
        b'{"defaults": {"policy": {"max_attempts": 0}}, "policies": {"p": {}}}',
        b'{"policies": {"p": {"max_attempts": 3,}}}',
        b'{"policies": {"p": {}, "p": {}}}',
        b'\xef\xbb\xbf{"policies": {"\\u00e9\\n": {"base_delay": "1.5\xc2\xb5s"}}}',
        b'{"policies": {"a": {}}}\x00MULLIGAN_POLICY_A_BACKOFF={"x": 1}'
        b"\x00MULLIGAN_POLICY_A_JITTER=full",
    ],
    "fuzz_grpc_config": [
        json.dumps(json.loads((EXAMPLES / "grpc_service_config.json").read_text())
                   ["methodConfig"]).encode(),
        b"[]",
        b'[{"name": [{}]}]',
        b'[{"name": [{"service": "s"}], "retryPolicy": {"maxAttempts": 2,'
        b' "initialBackoff": "0.000000001s", "maxBackoff": "9199999999s",'
        b' "backoffMultiplier": 1e300, "retryableStatusCodes": [14, "CANCELLED"],'
        b' "perAttemptRecvTimeout": "1s"}, "timeout": "0.5s", "waitForReady": true}]',
        b'[{"name": [{"method": "m"}]}, {"name": [{"service": "a"}, {"service": "a"}]}]',
        b'[{"name": [{"service": "s"}], "retryPolicy": {"maxAttempts": 1}}]',
        b'[], "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}, "x": 1',
        b'[{"name": [{"service": "s"}], "hedgingPolicy": {}}]',
    ],
    "fuzz_header_callback": [
        # Flags byte 0: lines as libcurl hands them over, now = 2024-01-01.
        b"\x00HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n",
        b"\x00HTTP/1.1 503 Service Unavailable\r\nRetry-After: 120\r\n\r\n",
        b"\x00HTTP/1.1 503 Service Unavailable\r\nRetry-After: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n",
        b"\x00HTTP/1.1 429 Too Many Requests\r\nRetry-After: Fri, 31 Dec 9999 23:59:59 GMT\r\n\r\n",
        b"\x00HTTP/1.1 503 x\r\nRetry-After: Sunday, 06-Nov-94 08:49:37 GMT\r\n\r\n",
        b"\x00HTTP/1.1 503 x\r\nRetry-After:  99999999999999999999 \r\n\r\n",
        b"\x00HTTP/1.1 503 x\r\nretry-after: -5\r\nRetry-After: 7\r\n\r\n",
        b"\x00HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nX-Mark: final\r\n\r\n",
        b"\x00HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        b"\x00HTTP/1.1 100 Continue\r\n\r\nhttp/1.1 200 OK\r\nX-B: 2\r\n",  # cut in the head
        b"\x00HTTP/1.1 200 OK\r\nA:  one \r\n\t two\r\n  \r\nB:\r\n: no name\r\n\n",  # obs-fold
        b"\x00HTTP/1.1 200 OK\nA: 1\n\n",  # bare LF line ends
        b"\x00HTTP/1.1 200 OK\r\nA: 1\r\n\rX: 2\r\n",  # a CR line ends the head
        b"\x00HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nT: x\r\nU: y\r\n",  # trailers
        b"\x00HTTP/1.1 301 Moved\r\nLocation: /b\r\n\r\nHTTP/1.1 200 OK\r\nC: 3\r\n",  # redirect
        b"\x00HTTP/1.1 200 Connection established\r\n\r\nHTTP/2 503 \r\nretry-after: 3\r\n\r\n",
        b"\x00HTTP/1.1 200 OK\r\nHTTP/1.1 503 x\r\nX: \x80\xff\r\n\r\n",
        b"\x00HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
        b"\x00HTTP/1.1 200 OK\r\nX-Cut: there is no line end",
        # Flags 2: an explicit now (1994-11-06T08:49:37Z) before the date.
        b"\x02" + struct.pack("<q", 784111777 * 10**9)
        + b"HTTP/1.1 503 x\r\nRetry-After: Sun, 06 Nov 1994 08:51:37 GMT\r\n\r\n",
        # Raw: pieces of 1 and of 7 bytes.
        b"\x01HTTP/1.1 200 OK\r\nA: b\r\n\r\n",
        b"\x61HTTP/1.1 503 x\r\nRetry-After: 5\r\n\t6\r\n\r\n",
    ],
    "fuzz_url": [
        b"http://127.0.0.1:8080/ok\nGET",
        b"HTTPS://Example.COM/path?q=1#f\nPOST\nContent-Type: application/json\n3f1c9a2e",
        b"http://[::1]:65535/\nPUT\nIdempotency-Key: k",
        b"http://example.com:0/\nGET",
        b"http://example.com:65536/\nGET",
        b"http://user:pass@host/\nDELETE\nX-Empty:",
        b"https:///nohost\nGET",
        b"ftp://example.com/\nGET",
        b"http://exa mple.com/\nGET",
        b"http://example.com/\nGE T",
        b"http://example.com/\nGET\nContent-Length: 5",
        b"http://example.com/\nGET\nX: a\rb",
        b"http://example.com/\nPOST\nIdempotency-Key: a\nb",
        b"http://%65xample.com/\nGET",
        b"http://xn--caf-dma.example/\nGET",
        # RedactUrl: userinfo forms, sensitive parameters in query and fragment.
        b"http://u:p@ss@host/\nGET",
        b"https://token@host:8443/a?api_key=k&q=1#access_token=t\nGET",
        b"http://user:%40pw@host/?X-Amz-Signature=s&sig=\nGET",
        b"http://host/users/@alice?mail=a@b\nGET",
        b"https:///user:pw@host/\nGET",  # libcurl skips the third slash
    ],
}


# Inputs that broke a post-condition, reduced to what shows the bug, kept as
# regressions (each also has a test in tests/core/): harness -> name -> input.
CRASHES: dict[str, dict[str, bytes]] = {
    "fuzz_retry_after": {
        # date - now overflowed int64 for a now before 1970.
        "date-minus-now-overflow": now_ns(-(2**63)) + b"Fri, 31 Dec 9999 23:59:59 GMT",
    },
    "fuzz_http_date": {
        # In 2093 "41" is 2141 (48 years ahead), not 2041.
        "rfc850-next-century": now_ns(3894652800 * 10**9) + b"Monday, 19-Jun-41 01:32:51 GMT",
        # On 1899-12-31T12:00Z the year is 1899, so "50" is 1850.
        "rfc850-before-1970": now_ns(-2209032000 * 10**9) + b"Tuesday, 01-Jan-50 00:00:00 GMT",
        # The harness's window was (now - 50, now + 50] by year; on 2024-01-01
        # "16-Mar-74" is more than 50 years ahead, so 1974 (the parser was right).
        "rfc850-window-edge": DEFAULT_NOW + b"Saturday, 16-Mar-74 10:59:52 GMT",
        # The window is on the full date: on 2082-12-01 "07-Jul-32" is 2032 (2132-07-07
        # is more than 50 years ahead); the harness compared by year only.
        "rfc850-window-full-date": now_ns(3563308800 * 10**9) + b"Monday, 07-Jul-32 04:46:11 GMT",
        # now = 1969-12-31T23:59:59.5Z: 2020-01-01T00:00:00Z is 50 years and half a
        # second ahead, so 1920; the parser rounded now up to 1970 and read 2020.
        "rfc850-now-before-1970-between-seconds": now_ns(-500_000_000)
        + b"Wednesday, 01-Jan-20 00:00:00 GMT",
    },
    "fuzz_idempotency_store": {
        # max_bytes 1: Reserve evicted everything, then blamed in-flight requests.
        "entry-over-budget": bytes.fromhex("010004010100000203 78797a 0000 0203 787977 00"
                                           .replace(" ", "")),
    },
    "fuzz_grpc_config": {
        # initialBackoff "0.0000000001s" passed "> 0" and rounded to 0 ns.
        "backoff-rounds-to-zero": b'[{"name": [{"service": "s"}], "retryPolicy": {'
        b'"maxAttempts": 2, "initialBackoff": "0.0000000001s", "maxBackoff": "1s",'
        b' "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]',
    },
}


def main() -> None:
    for harness, seeds in SEEDS.items():
        directory = CORPUS / harness
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("seed-*"):
            old.unlink()
        for seed in seeds:
            name = "seed-" + hashlib.sha1(seed).hexdigest()[:16]
            (directory / name).write_bytes(seed)
        crashes = CRASHES.get(harness, {})
        for name, data in crashes.items():
            (directory / f"crash-{name}").write_bytes(data)
        print(f"{harness}: {len(seeds)} seeds, {len(crashes)} crash regressions")


if __name__ == "__main__":
    main()
