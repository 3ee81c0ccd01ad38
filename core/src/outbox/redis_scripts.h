// core/src/outbox/redis_scripts.h — the Lua scripts of the Redis outbox
// store (redis_store.cc; the key layout is mulligan/outbox/redis_outbox.h's).
//
// Every script gets one key, KEYS[1] = the outbox's hash-tagged base
// "{prefix:outbox:name}", and derives the others from it by appending a
// suffix after the closing brace, so every key it touches is in the base's
// slot (Redis Cluster hashes only the tag). Times travel and are stored as
// 20-digit "lex" strings (OutboxLex in redis_store.cc: the nanoseconds since
// the Unix epoch with the sign bit flipped, zero-padded), because Lua's
// numbers are doubles, which cannot hold nanoseconds since 1970 exactly:
// the scripts compare and store times as strings and never compute with
// them; the client computes every time (now + delay, now + lease) exactly.
// Sorted sets are used with score 0 and ordered by member
// ("<lex time>:<20-digit id>"), read with ZRANGEBYLEX.
//
// History records are "<attempt>|<at ns>|<http status>|<error>|
// <classification>|<delay ns>|<message>"; the scripts write the attempt
// number, the client the rest.
//
// Thread-safety: constants.

#ifndef MULLIGAN_SRC_OUTBOX_REDIS_SCRIPTS_H_
#define MULLIGAN_SRC_OUTBOX_REDIS_SCRIPTS_H_

namespace mulligan {
inline namespace v0 {
namespace outbox_internal {

// Shared Lua helpers, prepended to the scripts that need them:
//   pad(id)            the 20-digit member form of an id
//   detach(t, id, e)   removes entry id (hash e) from the due set, the
//                      lease set and the stream (XACK + XDEL of its
//                      delivery), whichever hold it
//   move(t, pid, a, b) moves the member pid from state set a to b
//   fail_leased(t, id, e, created, state, attempts, nextl, prev, finl, stop,
//               rest, dead)
//                      records a failed attempt of leased entry id (an
//                      expired lease or Fail): its history record, fields and
//                      state set, then the due set (pending) or out of the
//                      live set (dead)
constexpr const char* kLuaHelpers = R"lua(
local function pad(id) return string.format('%020d', tonumber(id)) end
local function detach(t, id, e)
  local f = redis.call('HMGET', e, 'nextl', 'expl', 'msg')
  local pid = pad(id)
  redis.call('ZREM', t .. ':due', f[1] .. ':' .. pid)
  if f[2] then redis.call('ZREM', t .. ':leases', f[2] .. ':' .. pid) end
  if f[3] and f[3] ~= '' then
    redis.call('XACK', t .. ':stream', 'workers', f[3])
    redis.call('XDEL', t .. ':stream', f[3])
  end
end
local function move(t, pid, a, b)
  redis.call('ZREM', t .. ':s:' .. a, pid)
  redis.call('ZADD', t .. ':s:' .. b, 0, pid)
end
local function fail_leased(t, id, e, created, state, attempts, nextl, prev, finl, stop, rest,
                           dead)
  local pid = pad(id)
  detach(t, id, e)
  redis.call('RPUSH', t .. ':h:' .. id, attempts .. '|' .. rest)
  redis.call('HSET', e, 'state', state, 'attempts', attempts, 'nextl', nextl, 'prev', prev,
             'finl', finl, 'stop', stop, 'owner', '', 'expl', '', 'msg', '')
  move(t, pid, 1, state)
  if dead then
    redis.call('ZREM', t .. ':live', created .. ':' .. pid)
  else
    redis.call('ZADD', t .. ':due', 0, nextl .. ':' .. pid)
  end
end
)lua";

// Open. ARGV: schema, create ("1"/"0"). Returns 1 (ready), 0 (absent and
// not created) or the schema string found when it differs.
constexpr const char* kLuaOpen = R"lua(
local t = KEYS[1]
local schema = redis.call('HGET', t .. ':meta', 'schema')
if not schema then
  if ARGV[2] ~= '1' then return 0 end
  redis.call('HSET', t .. ':meta', 'schema', ARGV[1], 'seq', 0, 'deliveries', 0,
             'dead_letters', 0, 'failures', 0, 'lease_expiries', 0)
  return 1
end
if schema ~= ARGV[1] then return schema end
return 1
)lua";

// EnqueueMany. ARGV: now lex, previous delay ns, n, then per entry kind,
// key, method, url, headers, body, job, payload. Returns {1, ids...}, or
// {0, key, id} for a key already there (id "" when given twice in the
// batch): then nothing was written.
constexpr const char* kLuaEnqueue = R"lua(
local t = KEYS[1]
local n = tonumber(ARGV[3])
local seen = {}
for i = 0, n - 1 do
  local key = ARGV[3 + i * 8 + 2]
  local id = redis.call('HGET', t .. ':keys', key)
  if id then return {0, key, id} end
  if seen[key] then return {0, key, ''} end
  seen[key] = true
end
local out = {1}
for i = 0, n - 1 do
  local b = 3 + i * 8
  local id = redis.call('HINCRBY', t .. ':meta', 'seq', 1)
  local pid = pad(id)
  redis.call('HSET', t .. ':e:' .. id, 'id', id, 'kind', ARGV[b + 1], 'key', ARGV[b + 2],
             'method', ARGV[b + 3], 'url', ARGV[b + 4], 'headers', ARGV[b + 5],
             'body', ARGV[b + 6], 'job', ARGV[b + 7], 'payload', ARGV[b + 8],
             'state', 0, 'attempts', 0, 'base', 0, 'leases', 0, 'token', 0,
             'createdl', ARGV[1], 'nextl', ARGV[1], 'prev', ARGV[2], 'owner', '',
             'expl', '', 'finl', '', 'stop', '', 'msg', '')
  redis.call('HSET', t .. ':keys', ARGV[b + 2], id)
  redis.call('ZADD', t .. ':all', 0, pid)
  redis.call('ZADD', t .. ':s:0', 0, pid)
  redis.call('ZADD', t .. ':live', 0, ARGV[1] .. ':' .. pid)
  redis.call('ZADD', t .. ':due', 0, ARGV[1] .. ':' .. pid)
  out[#out + 1] = id
end
return out
)lua";

// The leases expired at now. ARGV: the bound "<now lex>;". Returns, per
// expired lease: id, token, attempts, base, prev, createdl, owner.
constexpr const char* kLuaExpired = R"lua(
local t = KEYS[1]
local out = {}
for _, m in ipairs(redis.call('ZRANGEBYLEX', t .. ':leases', '-', '(' .. ARGV[1])) do
  local id = tostring(tonumber(string.sub(m, 22)))
  local f = redis.call('HMGET', t .. ':e:' .. id, 'token', 'attempts', 'base', 'prev',
                       'createdl', 'owner')
  out[#out + 1] = {id, f[1], f[2], f[3], f[4], f[5], f[6]}
end
return out
)lua";

// Lease. ARGV: 1 "<now lex>;", 2 expiry lex, 3 worker, 4 max entries, 5 m
// (expired leases decided by the client), then per expired lease (10 each):
// id, token, state, attempts, next lex, prev, fin lex, stop, history record
// (without its attempt number), "1" when dead. An expired lease whose entry
// changed since the client read it (another worker recorded it first) is
// skipped. Then every due entry moves to the stream (oldest due first), and
// XREADGROUP hands up to max entries to the worker's consumer. Returns the
// leased entries as HGETALL arrays.
constexpr const char* kLuaLease = R"lua(
local t = KEYS[1]
local m = tonumber(ARGV[5])
local expired, dead = 0, 0
for i = 0, m - 1 do
  local o = 6 + i * 10
  local id = ARGV[o]
  local e = t .. ':e:' .. id
  local f = redis.call('HMGET', e, 'state', 'token', 'createdl')
  if f[1] == '1' and f[2] == ARGV[o + 1] then
    local is_dead = ARGV[o + 9] == '1'
    fail_leased(t, id, e, f[3], ARGV[o + 2], ARGV[o + 3], ARGV[o + 4], ARGV[o + 5], ARGV[o + 6],
                ARGV[o + 7], ARGV[o + 8], is_dead)
    if is_dead then dead = dead + 1 end
    expired = expired + 1
  end
end
if expired > 0 then redis.call('HINCRBY', t .. ':meta', 'lease_expiries', expired) end
if dead > 0 then redis.call('HINCRBY', t .. ':meta', 'dead_letters', dead) end
local stream = t .. ':stream'
if redis.call('EXISTS', stream) == 0 then
  redis.call('XGROUP', 'CREATE', stream, 'workers', '$', 'MKSTREAM')
end
for _, mem in ipairs(redis.call('ZRANGEBYLEX', t .. ':due', '-', '(' .. ARGV[1])) do
  local id = tostring(tonumber(string.sub(mem, 22)))
  local mid = redis.call('XADD', stream, '*', 'id', id)
  redis.call('HSET', t .. ':e:' .. id, 'msg', mid)
  redis.call('ZREM', t .. ':due', mem)
end
local read = redis.call('XREADGROUP', 'GROUP', 'workers', ARGV[3], 'COUNT', ARGV[4],
                        'STREAMS', stream, '>')
local out = {}
if not read then return out end
for _, msg in ipairs(read[1][2]) do
  local id = msg[2][2]
  local e = t .. ':e:' .. id
  local pid = pad(id)
  redis.call('HINCRBY', e, 'token', 1)
  redis.call('HINCRBY', e, 'leases', 1)
  redis.call('HSET', e, 'state', 1, 'owner', ARGV[3], 'expl', ARGV[2])
  move(t, pid, 0, 1)
  redis.call('ZADD', t .. ':leases', 0, ARGV[2] .. ':' .. pid)
  out[#out + 1] = redis.call('HGETALL', e)
end
return out
)lua";

// CompleteMany. ARGV: 1 now lex, 2 n, 3 the error number of a timeout, then
// per success (5 each): id, key, token, lease owner, the history record's
// rest for a success. Checks every success first (nothing written on an error):
// returns {0, "unknown"|"foreign"|"dead", id}; else records them and
// returns {1, delivered}.
constexpr const char* kLuaComplete = R"lua(
local t = KEYS[1]
local n = tonumber(ARGV[2])
for i = 0, n - 1 do
  local o = 4 + i * 5
  local id = ARGV[o]
  local e = t .. ':e:' .. id
  local f = redis.call('HMGET', e, 'state', 'key', 'token')
  if not f[1] then return {0, 'unknown', id} end
  if f[2] ~= ARGV[o + 1] then return {0, 'foreign', id} end
  if f[1] == '3' then
    -- Dead of this very lease's expiry (not leased since) is a delivery.
    local last = redis.call('LINDEX', t .. ':h:' .. id, -1) or ''
    local err, text = string.match(last, '^[^|]*|[^|]*|[^|]*|([^|]*)|[^|]*|[^|]*|(.*)$')
    local died = f[3] == ARGV[o + 2] and err == ARGV[3] and
                 text == 'lease expired, worker ' .. ARGV[o + 3]
    if not died then return {0, 'dead', id} end
  end
end
local delivered = 0
for i = 0, n - 1 do
  local o = 4 + i * 5
  local id = ARGV[o]
  local e = t .. ':e:' .. id
  local f = redis.call('HMGET', e, 'state', 'attempts', 'createdl')
  if f[1] ~= '2' then
    local pid = pad(id)
    detach(t, id, e)
    local attempt = tonumber(f[2]) + 1
    redis.call('RPUSH', t .. ':h:' .. id, attempt .. '|' .. ARGV[o + 4])
    redis.call('HSET', e, 'state', 2, 'attempts', attempt, 'finl', ARGV[1],
               'stop', 'succeeded', 'owner', '', 'expl', '', 'msg', '')
    move(t, pid, f[1], 2)
    redis.call('ZREM', t .. ':live', f[3] .. ':' .. pid)
    delivered = delivered + 1
  end
end
if delivered > 0 then redis.call('HINCRBY', t .. ':meta', 'deliveries', delivered) end
return {1, delivered}
)lua";

// Fail, after the client decided. ARGV: id, token, state, attempts, next
// lex, prev, fin lex, stop, history record's rest, "1" when dead. Returns 0
// (lease lost: the entry changed since the client read it) or 1.
constexpr const char* kLuaFail = R"lua(
local t = KEYS[1]
local id = ARGV[1]
local e = t .. ':e:' .. id
local f = redis.call('HMGET', e, 'state', 'token', 'createdl')
if f[1] ~= '1' or f[2] ~= ARGV[2] then return 0 end
fail_leased(t, id, e, f[3], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9],
            ARGV[10] == '1')
redis.call('HINCRBY', t .. ':meta', 'failures', 1)
if ARGV[10] == '1' then redis.call('HINCRBY', t .. ':meta', 'dead_letters', 1) end
return 1
)lua";

// List. ARGV: the state set ("all" or "s:<n>"), limit. Returns HGETALL
// arrays, id order.
constexpr const char* kLuaList = R"lua(
local t = KEYS[1]
local out = {}
for _, pid in ipairs(redis.call('ZRANGEBYLEX', t .. ':' .. ARGV[1], '-', '+', 'LIMIT', 0,
                                ARGV[2])) do
  out[#out + 1] = redis.call('HGETALL', t .. ':e:' .. tonumber(pid))
end
return out
)lua";

// Stats. Returns {pending, leased, done, dead, oldest live member or '',
// deliveries, dead_letters, failures, lease_expiries}.
constexpr const char* kLuaStats = R"lua(
local t = KEYS[1]
local oldest = redis.call('ZRANGE', t .. ':live', 0, 0)
local c = redis.call('HMGET', t .. ':meta', 'deliveries', 'dead_letters', 'failures',
                     'lease_expiries')
return {redis.call('ZCARD', t .. ':s:0'), redis.call('ZCARD', t .. ':s:1'),
        redis.call('ZCARD', t .. ':s:2'), redis.call('ZCARD', t .. ':s:3'), oldest[1] or '',
        c[1] or '0', c[2] or '0', c[3] or '0', c[4] or '0'}
)lua";

// Retry. ARGV: id, now lex, the policy's base delay ns. Returns 1, or the
// entry's state when it is not dead ("" when there is none).
constexpr const char* kLuaRetry = R"lua(
local t = KEYS[1]
local id = ARGV[1]
local e = t .. ':e:' .. id
local f = redis.call('HMGET', e, 'state', 'createdl')
if f[1] ~= '3' then return f[1] or '' end
local pid = pad(id)
redis.call('HSET', e, 'state', 0, 'nextl', ARGV[2], 'base', redis.call('HGET', e, 'attempts'),
           'prev', ARGV[3], 'finl', '', 'stop', '')
move(t, pid, 3, 0)
redis.call('ZADD', t .. ':live', 0, f[2] .. ':' .. pid)
redis.call('ZADD', t .. ':due', 0, ARGV[2] .. ':' .. pid)
return 1
)lua";

// Purge. ARGV: the state (2 or 3). Returns how many entries it deleted.
constexpr const char* kLuaPurge = R"lua(
local t = KEYS[1]
local set = t .. ':s:' .. ARGV[1]
local ids = redis.call('ZRANGE', set, 0, -1)
for _, pid in ipairs(ids) do
  local id = tonumber(pid)
  local e = t .. ':e:' .. id
  redis.call('HDEL', t .. ':keys', redis.call('HGET', e, 'key'))
  redis.call('DEL', e, t .. ':h:' .. id)
  redis.call('ZREM', t .. ':all', pid)
end
redis.call('DEL', set)
return #ids
)lua";

}  // namespace outbox_internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_SRC_OUTBOX_REDIS_SCRIPTS_H_
