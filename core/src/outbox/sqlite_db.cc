// core/src/outbox/sqlite_db.cc — see sqlite_db.h.

#include "outbox/sqlite_db.h"

#include <memory>
#include <utility>

namespace mulligan {
inline namespace v0 {
namespace outbox_internal {

Result<std::unique_ptr<Db>> Db::Open(const std::string& path, bool create) {
  sqlite3* handle = nullptr;
  const int flags =
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
  int rc = sqlite3_open_v2(path.c_str(), &handle, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string text = handle ? sqlite3_errmsg(handle) : sqlite3_errstr(rc);
    sqlite3_close(handle);
    if (!create && (rc & 0xff) == SQLITE_CANTOPEN)
      return OutboxError("outbox " + path + ": cannot open: no such file (not created: the "
                         "file must exist)");
    return OutboxError("outbox " + path + ": cannot open: " + text + " (" +
                       sqlite3_errstr(rc) + ")");
  }
  sqlite3_extended_result_codes(handle, 1);
  return std::unique_ptr<Db>(new Db(handle, path));
}

Db::~Db() { sqlite3_close(db_); }

bool Db::read_only() const { return sqlite3_db_readonly(db_, "main") == 1; }

Status Db::Error(std::string_view what, int rc) const {
  std::string message = "outbox " + path_ + ": " + std::string(what) + ": " +
                        sqlite3_errmsg(db_);
  // errmsg may be stale for some codes; the code's own text is always right.
  const std::string code_text = sqlite3_errstr(rc);
  if (message.size() < code_text.size() ||
      message.compare(message.size() - code_text.size(), code_text.size(), code_text) != 0)
    message += " (" + code_text + ")";
  if ((rc & 0xff) == SQLITE_READONLY) message += "; the database file is read-only";
  if ((rc & 0xff) == SQLITE_FULL) message += "; the disk or the outbox's size cap is full";
  return OutboxError(std::move(message));
}

Status Db::Exec(const char* sql, std::string_view what) {
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return Error(what, rc);
  return OkStatus();
}

Stmt::Stmt(Db& db, const char* sql) : db_(db) {
  int rc = sqlite3_prepare_v2(db.handle(), sql, -1, &stmt_, nullptr);
  if (rc != SQLITE_OK) status_ = db.Error("prepare", rc);
}

Stmt::~Stmt() { sqlite3_finalize(stmt_); }

Stmt& Stmt::Bind(int index, int64_t value) {
  if (stmt_) sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Stmt& Stmt::Bind(int index, std::string_view text) {
  if (stmt_)
    sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}

Stmt& Stmt::BindBlob(int index, std::string_view bytes) {
  // A zero-length blob must not be bound from a null pointer (that is NULL).
  static const char kEmpty = 0;
  if (stmt_)
    sqlite3_bind_blob(stmt_, index, bytes.empty() ? &kEmpty : bytes.data(),
                      static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  return *this;
}

Stmt& Stmt::BindNull(int index) {
  if (stmt_) sqlite3_bind_null(stmt_, index);
  return *this;
}

Result<bool> Stmt::Step(std::string_view what) {
  if (!status_.ok()) return status_;
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_.Error(what, rc);
}

Status Stmt::Run(std::string_view what) {
  Result<bool> row = Step(what);
  if (!row.ok()) return row.status();
  while (*row) {
    row = Step(what);
    if (!row.ok()) return row.status();
  }
  return OkStatus();
}

int64_t Stmt::Int(int column) const { return sqlite3_column_int64(stmt_, column); }

std::string Stmt::Text(int column) const {
  const void* data = sqlite3_column_blob(stmt_, column);
  int size = sqlite3_column_bytes(stmt_, column);
  if (!data || size <= 0) return std::string();
  return std::string(static_cast<const char*>(data), static_cast<size_t>(size));
}

bool Stmt::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

Transaction::Transaction(Db& db) : db_(db) {
  status_ = db.Exec("BEGIN IMMEDIATE", "begin transaction");
  open_ = status_.ok();
}

Transaction::~Transaction() {
  if (open_) (void)db_.Exec("ROLLBACK", "rollback");
}

Status Transaction::Commit(std::string_view what) {
  Status status = db_.Exec("COMMIT", what);
  if (status.ok()) open_ = false;
  return status;
}

}  // namespace outbox_internal
}  // namespace v0
}  // namespace mulligan
