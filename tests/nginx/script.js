// tests/nginx/script.js — the /script location of the test nginx (njs).
//
// Answers the n-th request carrying ?id=<id> with the n-th of its
// ?steps=<step>,<step>,... (the last step repeats once the script runs out):
// a step is an HTTP status, optionally followed by ":<Retry-After value>".
// So one logical call retried by a client meets a scripted outcome per
// attempt: ?id=c1&steps=503:2,503,200 is "503 with Retry-After: 2, then 503,
// then 200". The count of each id lives in a file of the server's work
// directory; nginx runs one worker process (nginx.conf.in), so requests are
// counted one at a time. Ids are [A-Za-z0-9_-]{1,64}; anything else is 400.
// A request's Idempotency-Key comes back as Echo-Idempotency-Key.

var fs = require('fs');

// Returns how many requests of `kind` with this id came before this one
// (0 for the first) and counts this one, in the file <kind>-<id> of the
// server's work directory (one worker process: one request at a time).
function countRequest(r, kind, id) {
    var path = r.variables.mulligan_script_dir + '/' + kind + '-' + id;
    var seen = 0;
    try {
        seen = parseInt(fs.readFileSync(path, 'utf8'), 10) || 0;
    } catch (e) {
        seen = 0;  // the first request with this id
    }
    fs.writeFileSync(path, String(seen + 1));
    return seen;
}

function answer(r) {
    var id = r.args.id || '';
    var steps = (r.args.steps || '').split(',');
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(id) || steps[0] === '') {
        r.return(400, 'bad script: need id=[A-Za-z0-9_-]{1,64} and steps=<status>[:<retry-after>],...\n');
        return;
    }
    var seen = countRequest(r, 'script', id);
    var step = steps[Math.min(seen, steps.length - 1)].split(':');
    var status = parseInt(step[0], 10);
    if (!(status >= 200 && status <= 599)) {
        r.return(400, 'bad script step: ' + steps[Math.min(seen, steps.length - 1)] + '\n');
        return;
    }
    if (step.length > 1) {
        r.headersOut['Retry-After'] = step[1];
    }
    // What the client sent as its Idempotency-Key, echoed back (the adapter
    // tests read it per attempt; the access log has it too).
    if (r.headersIn['Idempotency-Key'] !== undefined) {
        r.headersOut['Echo-Idempotency-Key'] = r.headersIn['Idempotency-Key'];
    }
    r.return(status, 'step ' + (seen + 1) + ' of ' + id + ': ' + status + '\n');
}

// murmur3's 32-bit finalizer over n: a deterministic sequence whose values
// mod 100 are spread evenly, with no correlation between neighbours.
function hash32(n) {
    var x = (n + 0x9e3779b9) | 0;
    x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
    x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
    return (x ^ (x >>> 16)) >>> 0;
}

// /failing?id=<id>&p=<percent>: the n-th request (0-based) of an id is a 503
// when hash32(n) % 100 < percent (default 30), else 200. The count lives in a
// file, as answer()'s does.
function failing(r) {
    var id = r.args.id || '';
    var percent = parseInt(r.args.p || '30', 10);
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(id) || !(percent >= 0 && percent <= 100)) {
        r.return(400, 'bad failing: need id=[A-Za-z0-9_-]{1,64} and p in [0, 100]\n');
        return;
    }
    var seen = countRequest(r, 'failing', id);
    if (hash32(seen) % 100 < percent) {
        r.return(503, 'failing\n');
    } else {
        r.return(200, 'ok\n');
    }
}

// /hedge?id=<id>&slow=<n>,...&ms=<ms>: the n-th request (0-based) of an id
// answers 200 after ms milliseconds (default 300) when n is listed in slow
// (default "0"), at once otherwise. The count lives in a file, as answer()'s
// does. A request's Idempotency-Key comes back as Echo-Idempotency-Key.
function hedge(r) {
    var id = r.args.id || '';
    var ms = parseInt(r.args.ms || '300', 10);
    var slow = (r.args.slow === undefined ? '0' : r.args.slow).split(',');
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(id) || !(ms >= 0 && ms <= 60000)) {
        r.return(400, 'bad hedge: need id=[A-Za-z0-9_-]{1,64} and ms in [0, 60000]\n');
        return;
    }
    var seen = countRequest(r, 'hedge', id);
    if (r.headersIn['Idempotency-Key'] !== undefined) {
        r.headersOut['Echo-Idempotency-Key'] = r.headersIn['Idempotency-Key'];
    }
    var body = 'hedge ' + seen + ' of ' + id + '\n';
    if (slow.indexOf(String(seen)) >= 0) {
        setTimeout(function () { r.return(200, body); }, ms);
    } else {
        r.return(200, body);
    }
}

export default {answer, failing, hedge};
