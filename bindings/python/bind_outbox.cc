// bindings/python/bind_outbox.cc — _core.Outbox over mulligan::Outbox
// (core/include/mulligan/outbox/outbox.h), for mulligan.Outbox
// (python/mulligan/_outbox/). Times cross as Unix seconds (float; the caller's
// clock: time.time() or mulligan.testing.FakeClock), durations as seconds,
// bodies and payloads as bytes. Entries cross as plain dicts that the Python
// layer turns into frozen dataclasses; a lease crosses as an opaque
// _core.OutboxLease the Python layer keeps private. Every call that touches
// the database releases the GIL (SQLite may wait up to busy_timeout).
// (Added in 0.5.)

#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bindings.h"
#include "mulligan/outbox/outbox.h"
#include "mulligan/outbox/redis_outbox.h"

namespace mulligan {
namespace python {
namespace {

double ToUnix(WallTime t) { return DurationToSeconds(t.time_since_epoch()); }

py::dict EntryDict(const OutboxEntry& e) {
  py::dict d;
  d["id"] = e.id;
  d["kind"] = OutboxKindName(e.spec.kind);
  // Text the Python side wrote as UTF-8 (pybind11's str conversion) reads
  // back as UTF-8, so an entry is sent as it was enqueued.
  d["idempotency_key"] = Utf8(e.spec.idempotency_key);
  d["method"] = Utf8(e.spec.method);
  d["url"] = Utf8(e.spec.url);
  py::list headers;
  for (const OutboxHeader& h : e.spec.headers)
    headers.append(py::make_tuple(Utf8(h.name), Utf8(h.value)));
  d["headers"] = headers;
  d["body"] = py::bytes(e.spec.body);
  d["job"] = Utf8(e.spec.job);
  d["payload"] = py::bytes(e.spec.payload);
  d["state"] = OutboxStateName(e.state);
  d["attempts"] = e.attempts;
  d["leases"] = e.leases;
  d["created_at"] = ToUnix(e.created_at);
  d["next_attempt_at"] = ToUnix(e.next_attempt_at);
  d["lease_owner"] = Utf8(e.lease_owner);
  d["lease_expires_at"] = ToUnix(e.lease_expires_at);
  d["finished_at"] = ToUnix(e.finished_at);
  d["stop_reason"] = Utf8(e.stop_reason);
  return d;
}

// Releases the GIL around `f` (a database call), then converts.
template <typename F>
auto Unlocked(F&& f) {
  py::gil_scoped_release release;
  return f();
}

OutboxOptions MakeOptions(const std::string& path, const RetryPolicy& policy,
                          const std::string& sync, double busy_timeout, double lease_timeout,
                          int64_t max_size_bytes, const std::string& name, bool create) {
  OutboxOptions o;
  o.path = path;
  o.name = name;
  o.create = create;
  if (sync == "full") {
    o.sync = OutboxSync::kFull;
  } else if (sync == "normal") {
    o.sync = OutboxSync::kNormal;
  } else {
    ThrowStatus(InvalidArgumentError("Outbox: sync must be 'full' or 'normal', got '" + sync +
                                     "'"));
  }
  o.busy_timeout = SecondsToDuration(busy_timeout, "busy_timeout");
  o.lease_timeout = SecondsToDuration(lease_timeout, "lease_timeout");
  o.max_size_bytes = max_size_bytes;
  o.retry = policy.options();
  return o;
}

}  // namespace

void BindOutbox(py::module_& m) {
  py::class_<OutboxLease>(m, "OutboxLease", "A worker's hold on one outbox entry (opaque).")
      .def_property_readonly("entry", [](const OutboxLease& l) { return EntryDict(l.entry); })
      .def_property_readonly("token", [](const OutboxLease& l) { return l.token; })
      .def_property_readonly("attempt_timeout", [](const OutboxLease& l) -> py::object {
        if (!l.attempt_timeout) return py::none();
        return py::float_(DurationToSeconds(*l.attempt_timeout));
      });

  // Held by a shared_ptr so that the default registry can track it weakly
  // (its mulligan_outbox_* metrics; 0.6).
  py::class_<Outbox, std::shared_ptr<Outbox>>(m, "Outbox",
                                              "The durable outbox on SQLite or Redis (outbox/outbox.h, outbox/redis_outbox.h).")
      .def(py::init([](const std::string& path, const RetryPolicy& policy,
                       const std::string& sync, double busy_timeout, double lease_timeout,
                       int64_t max_size_bytes, const std::string& name, bool metrics,
                       bool create, const py::object& state) {
             OutboxOptions o = MakeOptions(path, policy, sync, busy_timeout, lease_timeout,
                                           max_size_bytes, name, create);
             // state: a _core.RedisState puts the outbox on Redis (0.6).
             std::shared_ptr<RedisState> redis =
                 state.is_none() ? nullptr : StateFromPython(state);
             Result<std::unique_ptr<Outbox>> box = Unlocked([&] {
               return redis != nullptr ? OpenRedisOutbox(redis, o) : Outbox::Open(o);
             });
             std::shared_ptr<Outbox> shared(Unwrap(std::move(box)).release());
             if (metrics) MetricsRegistry::Default().Track(shared);
             return shared;
           }),
           py::arg("path"), py::arg("policy"), py::arg("sync") = "full",
           py::arg("busy_timeout") = 5.0, py::arg("lease_timeout") = 30.0,
           py::arg("max_size_bytes") = 0, py::arg("name") = "", py::arg("metrics") = true,
           py::arg("create") = true, py::arg("state") = py::none())
      .def(
          "enqueue_http",
          [](Outbox& box, const std::string& method, const std::string& url,
             const std::vector<std::pair<std::string, std::string>>& headers,
             const py::bytes& body, const std::string& key, double now_unix) {
            OutboxEntrySpec spec;
            spec.kind = OutboxKind::kHttp;
            spec.method = method;
            spec.url = url;
            for (const auto& h : headers) spec.headers.push_back({h.first, h.second});
            spec.body = body;
            spec.idempotency_key = key;
            WallTime now = UnixToWallTime(now_unix);
            return EntryDict(Unwrap(Unlocked([&] { return box.Enqueue(spec, now); })));
          },
          py::arg("method"), py::arg("url"), py::arg("headers"), py::arg("body"),
          py::arg("idempotency_key"), py::arg("now_unix"))
      .def(
          "enqueue_job",
          [](Outbox& box, const std::string& job, const py::bytes& payload,
             const std::string& key, double now_unix) {
            OutboxEntrySpec spec;
            spec.kind = OutboxKind::kJob;
            spec.job = job;
            spec.payload = payload;
            spec.idempotency_key = key;
            WallTime now = UnixToWallTime(now_unix);
            return EntryDict(Unwrap(Unlocked([&] { return box.Enqueue(spec, now); })));
          },
          py::arg("job"), py::arg("payload"), py::arg("idempotency_key"), py::arg("now_unix"))
      .def(
          "enqueue_many",
          [](Outbox& box,
             const std::vector<std::tuple<std::string, std::string, std::string,
                                          std::vector<std::pair<std::string, std::string>>,
                                          py::bytes, std::string, py::bytes, std::string>>& items,
             double now_unix) {
            // Each item: (kind "http" | "job", method, url, headers, body,
            // job, payload, idempotency_key).
            std::vector<OutboxEntrySpec> specs;
            for (const auto& item : items) {
              OutboxEntrySpec spec;
              const std::string& kind = std::get<0>(item);
              if (kind == "http") {
                spec.kind = OutboxKind::kHttp;
              } else if (kind == "job") {
                spec.kind = OutboxKind::kJob;
              } else {
                ThrowStatus(InvalidArgumentError("outbox entry kind must be http or job, got '" +
                                                 kind + "'"));
              }
              spec.method = std::get<1>(item);
              spec.url = std::get<2>(item);
              for (const auto& h : std::get<3>(item)) spec.headers.push_back({h.first, h.second});
              spec.body = std::get<4>(item);
              spec.job = std::get<5>(item);
              spec.payload = std::get<6>(item);
              spec.idempotency_key = std::get<7>(item);
              specs.push_back(std::move(spec));
            }
            WallTime now = UnixToWallTime(now_unix);
            std::vector<OutboxEntry> entries =
                Unwrap(Unlocked([&] { return box.EnqueueMany(specs, now); }));
            py::list out;
            for (const OutboxEntry& e : entries) out.append(EntryDict(e));
            return out;
          },
          py::arg("items"), py::arg("now_unix"))
      .def(
          "lease",
          [](Outbox& box, const std::string& worker, int max_entries, double now_unix,
             std::optional<double> lease_timeout) {
            std::optional<Duration> timeout;
            if (lease_timeout) timeout = SecondsToDuration(*lease_timeout, "lease_timeout");
            WallTime now = UnixToWallTime(now_unix);
            return Unwrap(
                Unlocked([&] { return box.Lease(worker, max_entries, now, timeout); }));
          },
          py::arg("worker"), py::arg("max_entries"), py::arg("now_unix"),
          py::arg("lease_timeout") = py::none())
      .def(
          "complete",
          [](Outbox& box, const OutboxLease& lease, double now_unix, int http_status) {
            WallTime now = UnixToWallTime(now_unix);
            Status s = Unlocked([&] { return box.Complete(lease, now, http_status); });
            if (!s.ok()) ThrowStatus(s);
          },
          py::arg("lease"), py::arg("now_unix"), py::arg("http_status") = 0)
      .def(
          "complete_many",
          [](Outbox& box, const std::vector<std::pair<const OutboxLease*, int>>& successes,
             double now_unix) {
            std::vector<OutboxSuccess> batch;
            for (const auto& s : successes) batch.push_back({s.first, s.second});
            WallTime now = UnixToWallTime(now_unix);
            Status s = Unlocked([&] { return box.CompleteMany(batch, now); });
            if (!s.ok()) ThrowStatus(s);
          },
          py::arg("successes"), py::arg("now_unix"))
      .def(
          "fail",
          [](Outbox& box, const OutboxLease& lease, const Outcome& outcome,
             const std::string& message, double now_unix, int http_status) {
            WallTime now = UnixToWallTime(now_unix);
            OutboxFailure f = Unwrap(
                Unlocked([&] { return box.Fail(lease, outcome, message, now, http_status); }));
            py::dict d;
            d["state"] = OutboxStateName(f.state);
            d["next_attempt_at"] = ToUnix(f.next_attempt_at);
            d["delay"] = DurationToSeconds(f.delay);
            d["reason"] = StopReasonName(f.reason);
            d["attempt"] = f.attempt;
            return d;
          },
          py::arg("lease"), py::arg("outcome"), py::arg("message"), py::arg("now_unix"),
          py::arg("http_status") = 0)
      .def("get",
           [](Outbox& box, int64_t id) {
             return EntryDict(Unwrap(Unlocked([&] { return box.Get(id); })));
           },
           py::arg("id"))
      .def(
          "list",
          [](Outbox& box, std::optional<std::string> state, int limit) {
            std::optional<OutboxState> s;
            if (state) s = Unwrap(ParseOutboxState(*state));
            std::vector<OutboxEntry> entries = Unwrap(Unlocked([&] { return box.List(s, limit); }));
            py::list out;
            for (const OutboxEntry& e : entries) out.append(EntryDict(e));
            return out;
          },
          py::arg("state") = py::none(), py::arg("limit") = 100)
      .def(
          "history",
          [](Outbox& box, int64_t id) {
            std::vector<OutboxAttempt> h = Unwrap(Unlocked([&] { return box.History(id); }));
            py::list out;
            for (const OutboxAttempt& a : h) {
              py::dict d;
              d["attempt"] = a.attempt;
              d["at"] = ToUnix(a.at);
              d["http_status"] = a.http_status;
              d["error"] = ErrorKindName(a.error);
              d["classification"] = ClassificationName(a.classification);
              d["message"] = Utf8(a.message);
              d["delay"] = DurationToSeconds(a.delay);
              out.append(d);
            }
            return out;
          },
          py::arg("id"))
      .def(
          "stats",
          [](Outbox& box, double now_unix) {
            WallTime now = UnixToWallTime(now_unix);
            OutboxStats s = Unwrap(Unlocked([&] { return box.Stats(now); }));
            py::dict d;
            d["depth"] = s.depth;
            d["pending"] = s.pending;
            d["leased"] = s.leased;
            d["done"] = s.done;
            d["dead"] = s.dead;
            d["oldest_age"] = DurationToSeconds(s.oldest_age);
            d["deliveries"] = s.deliveries;
            d["dead_letters"] = s.dead_letters;
            d["failures"] = s.failures;
            d["lease_expiries"] = s.lease_expiries;
            return d;
          },
          py::arg("now_unix"))
      .def(
          "retry",
          [](Outbox& box, int64_t id, double now_unix) {
            WallTime now = UnixToWallTime(now_unix);
            Status s = Unlocked([&] { return box.Retry(id, now); });
            if (!s.ok()) ThrowStatus(s);
          },
          py::arg("id"), py::arg("now_unix"))
      .def(
          "purge",
          [](Outbox& box, const std::string& state) {
            OutboxState s = Unwrap(ParseOutboxState(state));
            return Unwrap(Unlocked([&] { return box.Purge(s); }));
          },
          py::arg("state"));
}

}  // namespace python
}  // namespace mulligan
