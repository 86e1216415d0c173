#include "apply.hpp"

#include "table.hpp"

namespace sched::ctl {

int ApplyPlan(const Plan& plan, const ApiCall& call, std::ostream& out, std::ostream& err, std::string_view kind) {
    const std::string collection = "/api/v1/" + std::string(kind) + "s";
    const std::string prefix = kind == "job" ? std::string() : std::string(kind) + " ";
    int failures = 0;
    const std::size_t to_change = plan.changes.size() - plan.Count(ChangeKind::kUnchanged);
    std::size_t done = 0;
    for (const auto& c : plan.changes) {
        Result<ApiReply> reply = Status(Code::kInternal, "no call");
        std::string verb;
        switch (c.kind) {
            case ChangeKind::kUnchanged:
                continue;
            case ChangeKind::kCreate:
                verb = "created";
                reply = call(http::Method::kPost, collection, c.body);
                break;
            case ChangeKind::kUpdate:
                verb = "updated";
                reply = call(http::Method::kPut, collection + "/" + std::to_string(c.id), c.body);
                break;
            case ChangeKind::kDelete:
                verb = "deleted";
                reply = call(http::Method::kDelete, collection + "/" + std::to_string(c.id), std::nullopt);
                break;
        }
        const std::string name = prefix + SanitizeCell(c.name);
        if (!reply.ok()) {
            err << "schedctl: " << name << ": " << reply.status().message() << "; stopped, " << (to_change - done)
                << " change(s) not made\n";
            return failures + static_cast<int>(to_change - done);
        }
        ++done;
        if (reply->ok()) {
            out << name << ": " << verb << "\n";
        } else if (reply->status == 409 && c.kind == ChangeKind::kUpdate) {
            ++failures;
            err << "schedctl: " << name << ": not updated: the " << kind << " changed since it was read (version "
                << c.version << "): " << DescribeError(*reply) << "; run diff again\n";
        } else {
            ++failures;
            err << "schedctl: " << name << ": not " << verb << ": " << DescribeError(*reply) << "\n";
        }
    }
    return failures;
}

}  // namespace sched::ctl
