#pragma once

/// One object a file declares (a job or a calendar): `fields` holds exactly the keys the file
/// gave (name included), typed as the API takes them.

#include <string>

#include <nlohmann/json.hpp>

namespace sched::ctl {

struct DeclaredObject {
    std::string name;
    nlohmann::json fields = nlohmann::json::object();
};

}  // namespace sched::ctl
