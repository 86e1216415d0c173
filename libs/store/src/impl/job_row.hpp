#pragma once

// A job read in a statement that joins `job` to other rows: the slave's claim reads the fires it
// won and their jobs in one SELECT (fire_claims.cpp). The columns and their reading are
// JobRepository's own (job.cpp), so a column added there is read here too.

#include <memory>
#include <string>
#include <string_view>

#include <soci/soci.h>

#include "query.hpp"
#include "sched/model/job.hpp"

namespace sched::store::impl {

/// `columns`, a select list of plain column names ("id, name, ..."), each qualified by `alias`
/// ("j.id, j.name, ...").
std::string QualifiedColumns(std::string_view columns, std::string_view alias);

/// Every column JobRepository reads, each qualified by `alias` ("j.id, j.name, ..."), in the
/// order JoinedJobRow binds them.
std::string JobColumns(std::string_view alias);

/// Binds the columns of JobColumns (after the caller's own, in the same statement) and turns each
/// fetched row into its Job, as JobRepository does. Not thread-safe; one per statement.
class JoinedJobRow {
  public:
    JoinedJobRow();
    ~JoinedJobRow();
    JoinedJobRow(JoinedJobRow&&) noexcept;
    JoinedJobRow& operator=(JoinedJobRow&&) noexcept;
    JoinedJobRow(const JoinedJobRow&) = delete;
    JoinedJobRow& operator=(const JoinedJobRow&) = delete;

    void BindInto(soci::statement& st, IntColumns& ints);
    model::Job Finish();

  private:
    struct Row;
    std::unique_ptr<Row> row_;
};

}  // namespace sched::store::impl
