// bindings/python/bind_idempotency.cc — IdempotencyStore, its reservations and the
// Idempotency-Key parser.
//
// Header fields cross as bytes pairs (what ASGI uses; the WSGI middleware
// encodes its str pairs as ISO-8859-1 first). `now` arguments are
// time.monotonic() readings (or a fake clock's), converted like every other
// `now` of _core. The store's critical sections are short (a hash look-up
// under a shard mutex), so the GIL is kept: releasing and retaking it would
// cost more than the wait it could save. A store on Redis (state=...) makes
// a network round trip per operation instead, so there the GIL is released.
#include <memory>
#include <string>
#include <utility>

#include <pybind11/stl.h>

#include "bindings.h"
#include "mulligan/idempotency/redis_store.h"
#include "mulligan/idempotency/store.h"
#include "mulligan/state/redis.h"

namespace mulligan {
namespace python {
namespace {

std::unique_ptr<IdempotencyStore> MakeStore(double ttl, double lease,
                                            double in_flight_retry_after, size_t max_entries,
                                            size_t max_bytes, size_t max_key_length, int shards,
                                            const py::object& state) {
  IdempotencyStoreOptions options;
  options.ttl = SecondsToDuration(ttl, "ttl");
  options.lease = SecondsToDuration(lease, "lease");
  options.in_flight_retry_after = SecondsToDuration(in_flight_retry_after, "in_flight_retry_after");
  options.max_entries = max_entries;
  options.max_bytes = max_bytes;
  options.max_key_length = max_key_length;
  options.shards = shards;
  if (std::shared_ptr<RedisState> redis = StateFromPython(state)) {
    return Unwrap(RedisIdempotencyStore::Create(std::move(redis), options));
  }
  return Unwrap(IdempotencyStore::Create(options));
}

// True when the store's operations are network round trips.
bool Remote(const IdempotencyStore& store) { return std::string_view(store.backend()) != "memory"; }

// Runs `op` without the GIL when the store is remote.
template <typename Op>
auto Call(const IdempotencyStore& store, Op op) {
  if (Remote(store)) {
    py::gil_scoped_release release;
    return op();
  }
  return op();
}

py::bytes Bytes(const std::string& s) { return py::bytes(s.data(), s.size()); }

std::string ToString(const py::handle& h) {
  char* data = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(h.ptr(), &data, &size) != 0) throw py::error_already_set();
  return std::string(data, static_cast<size_t>(size));
}

}  // namespace

namespace {

void BindReservation(py::module_& m) {
  py::class_<Reservation>(m, "Reservation", "The result of IdempotencyStore.reserve().")
      .def_property_readonly("state",
                             [](const Reservation& r) { return ReserveStateName(r.state); })
      .def_property_readonly("retry_after",
                             [](const Reservation& r) { return DurationToSeconds(r.retry_after); })
      .def_property_readonly("status",
                             [](const Reservation& r) { return r.response ? r.response->status : 0; })
      .def_property_readonly("headers",
                             [](const Reservation& r) {
                               py::list out;
                               if (r.response) {
                                 for (const auto& [name, value] : r.response->headers) {
                                   out.append(py::make_tuple(Bytes(name), Bytes(value)));
                                 }
                               }
                               return out;
                             })
      .def_property_readonly("body", [](const Reservation& r) {
        return r.response ? Bytes(r.response->body) : py::bytes();
      });

}

void BindStore(py::module_& m) {
  py::class_<IdempotencyStore, std::unique_ptr<IdempotencyStore>>(
      m, "IdempotencyStore", "A bounded, thread-safe record of idempotency keys.")
      .def(py::init(&MakeStore), py::kw_only(), py::arg("ttl") = 86400.0,
           py::arg("lease") = 60.0, py::arg("in_flight_retry_after") = 1.0,
           py::arg("max_entries") = size_t{100000}, py::arg("max_bytes") = size_t{256} << 20,
           py::arg("max_key_length") = kDefaultMaxIdempotencyKeyLength, py::arg("shards") = 16,
           py::arg("state") = py::none())
      .def(
          "reserve",
          [](IdempotencyStore& store, std::string_view scope, std::string_view key,
             py::bytes fingerprint, double now) {
            std::string_view fp(fingerprint);
            const TimePoint at = MonotonicToTimePoint(now);
            return Unwrap(Call(store, [&] { return store.Reserve(scope, key, fp, at); }));
          },
          py::arg("scope"), py::arg("key"), py::arg("fingerprint"), py::arg("now"))
      .def(
          "complete",
          [](IdempotencyStore& store, const Reservation& reservation, int status,
             const py::list& headers, py::bytes body, double now) {
            StoredResponse response;
            response.status = status;
            response.headers.reserve(headers.size());
            for (const py::handle& pair : headers) {
              py::tuple t = py::reinterpret_borrow<py::tuple>(pair);
              response.headers.emplace_back(ToString(t[0]), ToString(t[1]));
            }
            response.body = ToString(body);
            const TimePoint at = MonotonicToTimePoint(now);
            Status s = Call(store, [&] {
              return store.Complete(reservation.lease, std::move(response), at);
            });
            if (!s.ok()) ThrowStatus(s);
          },
          py::arg("reservation"), py::arg("status"), py::arg("headers"), py::arg("body"),
          py::arg("now"))
      .def(
          "release",
          [](IdempotencyStore& store, const Reservation& reservation) {
            Status s = Call(store, [&] { return store.Release(reservation.lease); });
            if (!s.ok()) ThrowStatus(s);
          },
          py::arg("reservation"))
      .def(
          "sweep",
          [](IdempotencyStore& store, double now) { store.Sweep(MonotonicToTimePoint(now)); },
          py::arg("now"))
      .def_property_readonly("backend", [](const IdempotencyStore& store) {
        return std::string(store.backend());
      })
      .def("stats", [](const IdempotencyStore& store) {
        IdempotencyStoreStats s = store.Stats();
        py::dict d;
        d["entries"] = s.entries;
        d["in_flight"] = s.in_flight;
        d["bytes"] = s.bytes;
        d["reserved"] = s.reserved;
        d["replayed"] = s.replayed;
        d["in_flight_conflicts"] = s.in_flight_conflicts;
        d["fingerprint_mismatches"] = s.fingerprint_mismatches;
        d["completed"] = s.completed;
        d["released"] = s.released;
        d["evicted"] = s.evicted;
        d["expired"] = s.expired;
        d["rejected_full"] = s.rejected_full;
        return d;
      });
}

}  // namespace

void BindIdempotency(py::module_& m) {
  m.def(
      "parse_idempotency_key",
      [](const std::string& value, size_t max_length) {
        return Unwrap(ParseIdempotencyKey(value, max_length));
      },
      py::arg("value"), py::arg("max_length") = kDefaultMaxIdempotencyKeyLength,
      "Parses an Idempotency-Key field value (sf-string or bare token); ValueError if malformed.");

  BindReservation(m);
  BindStore(m);
}

}  // namespace python
}  // namespace mulligan
