// core/src/outbox/sqlite_db.h — the few SQLite helpers the outbox needs: an
// owned connection, prepared statements with typed binds and reads, and
// BEGIN IMMEDIATE transactions that roll back unless committed. Every error
// becomes a kOutbox Status naming the database file and SQLite's own text
// (sqlite3_errmsg and the extended result code's name, sqlite3_errstr).
//
// Thread-safety: none; the Outbox serializes every use behind its mutex.

#ifndef MULLIGAN_SRC_OUTBOX_SQLITE_DB_H_
#define MULLIGAN_SRC_OUTBOX_SQLITE_DB_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "mulligan/base/status.h"

namespace mulligan {
inline namespace v0 {
namespace outbox_internal {

// An open connection (sqlite3_open_v2 with READWRITE | NOMUTEX, and CREATE
// unless told not to).
class Db {
 public:
  // Opens `path`, creating it when absent only if `create`; kOutbox on
  // failure ("no such file" when it is absent and `create` is false).
  static Result<std::unique_ptr<Db>> Open(const std::string& path, bool create = true);
  ~Db();
  Db(const Db&) = delete;             // owns the handle
  Db& operator=(const Db&) = delete;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  // True when SQLite opened the file read-only (no write permission).
  bool read_only() const;
  // Runs `sql` (no results wanted); kOutbox "<what>: ..." on failure.
  Status Exec(const char* sql, std::string_view what);
  // The kOutbox status for the connection's last error while doing `what`.
  Status Error(std::string_view what, int rc) const;

 private:
  Db(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

// A prepared statement, finalized on destruction. Bind indexes start at 1,
// column indexes at 0 (SQLite's conventions).
class Stmt {
 public:
  Stmt(Db& db, const char* sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;  // owns the statement
  Stmt& operator=(const Stmt&) = delete;

  // The preparation's status (kOutbox when the SQL did not compile).
  const Status& status() const { return status_; }
  Stmt& Bind(int index, int64_t value);
  Stmt& Bind(int index, std::string_view text);
  Stmt& BindBlob(int index, std::string_view bytes);
  Stmt& BindNull(int index);
  // Steps once: true with a row, false when done; kOutbox on error.
  Result<bool> Step(std::string_view what);
  // Steps to completion (a write); kOutbox on error.
  Status Run(std::string_view what);
  int64_t Int(int column) const;
  std::string Text(int column) const;
  bool IsNull(int column) const;

 private:
  Db& db_;
  sqlite3_stmt* stmt_ = nullptr;
  Status status_;
};

// BEGIN IMMEDIATE on construction (status() says whether it began); ROLLBACK
// on destruction unless Commit succeeded.
class Transaction {
 public:
  explicit Transaction(Db& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;  // one transaction per scope
  Transaction& operator=(const Transaction&) = delete;
  const Status& status() const { return status_; }
  Status Commit(std::string_view what);

 private:
  Db& db_;
  Status status_;
  bool open_ = false;
};

}  // namespace outbox_internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_SRC_OUTBOX_SQLITE_DB_H_
