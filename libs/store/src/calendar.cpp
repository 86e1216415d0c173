#include "sched/store/calendar.hpp"

#include <algorithm>

#include "impl/query.hpp"
#include "sched/store/job.hpp"

namespace sched::store {

namespace {

constexpr const char* kColumns =
    "id, name, description, time_zone, excluded_dates, excluded_weekdays, excluded_times, version, created_at, "
    "updated_at";

std::string JoinLines(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& line : lines) out += (out.empty() ? "" : "\n") + line;
    return out;
}

std::vector<std::string> SplitLines(const std::string& text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < text.size()) {
        const auto end = std::min(text.find('\n', start), text.size());
        if (end > start) out.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

struct CalendarRow {
    CalendarRecord c;
    std::string dates;
    std::string weekdays;
    std::string times;

    void BindInto(soci::statement& st) {
        impl::IntoColumns(st, c.id, c.name, c.description, c.time_zone, dates, weekdays, times, c.version, c.created_at,
                          c.updated_at);
    }
    CalendarRecord Finish() {
        CalendarRecord out = c;
        out.excluded_dates = SplitLines(dates);
        out.excluded_weekdays = SplitLines(weekdays);
        out.excluded_times = SplitLines(times);
        return out;
    }
};

std::optional<CalendarRecord> FindWhere(soci::session& s, const std::string& where, std::int64_t id,
                                        const std::string& name) {
    auto rows = impl::SelectRows<CalendarRow>(s, std::string("SELECT ") + kColumns + " FROM calendar WHERE " + where,
                                              [&](soci::statement& st) {
                                                  if (where.find(":id") != std::string::npos) {
                                                      st.exchange(soci::use(id, "id"));
                                                  } else {
                                                      st.exchange(soci::use(name, "name"));
                                                  }
                                              });
    if (rows.empty()) return std::nullopt;
    return rows.front();
}

}  // namespace

Result<CalendarRecord> CalendarRepository::Create(const CalendarRecord& c) {
    auto id = db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<std::int64_t> {
        const std::string dates = JoinLines(c.excluded_dates);
        const std::string weekdays = JoinLines(c.excluded_weekdays);
        const std::string times = JoinLines(c.excluded_times);
        const std::string now(db_.dialect().NowMs());
        s << "INSERT INTO calendar (name, description, time_zone, excluded_dates, excluded_weekdays, excluded_times, "
             "version, created_at, updated_at) VALUES (:name, :description, :time_zone, :dates, :weekdays, :times, "
             "1, " +
                 now + ", " + now + ")",
            soci::use(c.name, "name"), soci::use(c.description, "description"), soci::use(c.time_zone, "time_zone"),
            soci::use(dates, "dates"), soci::use(weekdays, "weekdays"), soci::use(times, "times");
        long long new_id = 0;
        if (!s.get_last_insert_id("calendar", new_id)) return Internal("no id for the new calendar");
        return static_cast<std::int64_t>(new_id);
    });
    if (!id.ok()) {
        if (id.status().code() == Code::kAlreadyExists) {
            return AlreadyExists("a calendar named \"" + c.name + "\" exists already");
        }
        return id.status();
    }
    return Get(*id);
}

Result<CalendarRecord> CalendarRepository::Get(std::int64_t id) {
    return db_.Run([&](soci::session& s) -> Result<CalendarRecord> {
        auto found = FindWhere(s, "id = :id", id, "");
        if (!found) return NotFound("calendar " + std::to_string(id) + " not found");
        return *found;
    });
}

Result<CalendarRecord> CalendarRepository::GetByName(const std::string& name) {
    return impl::GetByName(db_, "calendar \"" + name + "\"", name, FindByName);
}

Result<std::vector<CalendarRecord>> CalendarRepository::List(std::int64_t after_id, int limit) {
    return db_.Run([&](soci::session& s) {
        return impl::SelectRows<CalendarRow>(
            s,
            std::string("SELECT ") + kColumns + " FROM calendar WHERE id > :after_id ORDER BY id LIMIT " +
                std::to_string(std::clamp(limit, 1, 1000)),
            [&](soci::statement& st) { st.exchange(soci::use(after_id, "after_id")); });
    });
}

Result<CalendarRecord> CalendarRepository::Update(const CalendarRecord& c, std::int64_t expected_version) {
    Status updated = db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Status {
        const std::string dates = JoinLines(c.excluded_dates);
        const std::string weekdays = JoinLines(c.excluded_weekdays);
        const std::string times = JoinLines(c.excluded_times);
        const std::int64_t id = c.id;
        soci::statement st =
            (s.prepare << "UPDATE calendar SET description = :description, time_zone = :time_zone, excluded_dates = "
                          ":dates, excluded_weekdays = :weekdays, excluded_times = :times, version = version + 1, "
                          "updated_at = " +
                              std::string(db_.dialect().NowMs()) + " WHERE id = :id AND version = :expected",
             soci::use(c.description, "description"), soci::use(c.time_zone, "time_zone"), soci::use(dates, "dates"),
             soci::use(weekdays, "weekdays"), soci::use(times, "times"), soci::use(id, "id"),
             soci::use(expected_version, "expected"));
        if (impl::ExecuteAffected(st) == 1) return Status::Ok();
        auto current = FindWhere(s, "id = :id", id, "");
        if (!current) return NotFound("calendar " + std::to_string(id) + " not found");
        return Aborted("calendar " + std::to_string(id) + " is at version " + std::to_string(current->version) +
                       ", not " + std::to_string(expected_version) + " (changed by someone else)");
    });
    if (!updated.ok()) return updated;
    return Get(c.id);
}

Status CalendarRepository::Delete(std::int64_t id) {
    return db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Status {
        auto current = FindWhere(s, "id = :id", id, "");
        if (!current) return NotFound("calendar " + std::to_string(id) + " not found");
        // Checked inside the write transaction: a job created meanwhile naming this calendar
        // either committed before (and is seen here) or checks the calendar after this commits.
        const auto users = JobRepository::NamesUsingCalendar(s, current->name, 20);
        if (!users.empty()) {
            std::string list;
            for (const auto& name : users) list += (list.empty() ? "" : ", ") + name;
            return FailedPrecondition("calendar \"" + current->name + "\" is used by jobs: " + list +
                                      (users.size() == 20 ? ", ..." : ""));
        }
        soci::statement st = (s.prepare << "DELETE FROM calendar WHERE id = :id", soci::use(id, "id"));
        impl::ExecuteAffected(st);
        return Status::Ok();
    });
}

Result<std::int64_t> CalendarRepository::Count() {
    return impl::CountRows(db_, "calendar");
}

std::vector<CalendarVersion> CalendarRepository::ListVersions(soci::session& s) {
    struct Row {
        CalendarVersion v;
        void BindInto(soci::statement& st) { impl::IntoColumns(st, v.id, v.name, v.version); }
        CalendarVersion Finish() const { return v; }
    };
    return impl::SelectRows<Row>(s, "SELECT id, name, version FROM calendar ORDER BY id LIMIT 10000",
                                 [](soci::statement&) {});
}

std::optional<CalendarRecord> CalendarRepository::FindByName(soci::session& s, const std::string& name) {
    return FindWhere(s, "name = :name", 0, name);
}

}  // namespace sched::store
