#pragma once

/// The REST API's answers as types (docs/api.md; schemas in libs/web/assets/openapi.json): the
/// web module writes each answer from its view type and schedctl reads it into the same type, so
/// every field name is spelled once, in the view's field table:
///
///     struct CalendarView {
///         std::int64_t id = 0;
///         std::string name;
///         std::optional<std::int64_t> deleted_at;   // always sent; null when empty
///
///         SCHED_API_FIELDS(CalendarView, id, name, deleted_at)
///     };
///     nlohmann::json body = ToJson(view);
///     Result<CalendarView> read = FromJson<CalendarView>(body);
///
/// SCHED_API_FIELDS names each member once: its JSON name is the member's name, and it is always
/// in the JSON (an empty std::optional as null). A view with a field named otherwise, or one sent
/// only when set (Presence::kWhenSet, an optional left out when empty), writes its table by hand:
///
///         static constexpr auto Fields() {
///             return std::tuple{Field("id", &FireLogView::id),
///                               Field("stored_at_ms", &FireLogView::stored_at_ms, Presence::kWhenSet)};
///         }
///
/// The fields always present are the OpenAPI schema's `required` list, which a test checks
/// against the table (libs/web/test).
///
/// Member types: bool, std::int64_t, std::string, nlohmann::json (any JSON value), another view,
/// and std::optional / std::vector of those.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/common/status.hpp"

namespace sched::api {

/// Whether a field is in every answer (kAlways; null when an optional is empty) or only when it
/// holds a value (kWhenSet, for std::optional members).
enum class Presence { kAlways, kWhenSet };

/// One entry of a view's field table: the JSON name and the member it holds.
template <typename View, typename T>
struct Field {
    constexpr Field(std::string_view field_name, T View::*field_member, Presence field_presence = Presence::kAlways)
        : name(field_name), member(field_member), presence(field_presence) {}

    std::string_view name;
    T View::*member;
    Presence presence;
};

/// A type with a field table (`static constexpr auto Fields()` returning a tuple of Field).
template <typename T>
concept ViewType = requires {
    T::Fields();
};

namespace impl {

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

/// "items[2].id" from "items[2]" and "id"; the name alone at the top.
std::string Member(std::string_view path, std::string_view name);
/// kInvalidArgument "<path>: <what>" ("id: expected an integer").
Status Wrong(std::string_view path, std::string_view what);

template <typename T>
nlohmann::json ValueToJson(const T& value) {
    if constexpr (IsOptional<T>::value) {
        return value ? ValueToJson(*value) : nlohmann::json(nullptr);
    } else if constexpr (IsVector<T>::value) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& item : value) out.push_back(ValueToJson(item));
        return out;
    } else if constexpr (ViewType<T>) {
        nlohmann::json out = nlohmann::json::object();
        std::apply(
            [&](const auto&... field) {
                (
                    [&] {
                        const auto& member = value.*(field.member);
                        if constexpr (IsOptional<std::remove_cvref_t<decltype(member)>>::value) {
                            if (field.presence == Presence::kWhenSet && !member) return;
                        }
                        out[std::string(field.name)] = ValueToJson(member);
                    }(),
                    ...);
            },
            T::Fields());
        return out;
    } else {
        static_assert(std::is_same_v<T, bool> || std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::string> ||
                          std::is_same_v<T, nlohmann::json>,
                      "a view member is bool, std::int64_t, std::string, nlohmann::json, a view, or an optional or "
                      "vector of those");
        return nlohmann::json(value);
    }
}

template <typename T>
Status ReadValue(const nlohmann::json& json, const std::string& path, T& out) {
    if constexpr (IsOptional<T>::value) {
        if (json.is_null()) {
            out.reset();
            return Status::Ok();
        }
        typename T::value_type value{};
        if (Status s = ReadValue(json, path, value); !s.ok()) return s;
        out = std::move(value);
        return Status::Ok();
    } else if constexpr (IsVector<T>::value) {
        if (!json.is_array()) return Wrong(path, "expected an array");
        out.clear();
        out.reserve(json.size());
        for (std::size_t i = 0; i < json.size(); ++i) {
            typename T::value_type item{};
            if (Status s = ReadValue(json[i], path + "[" + std::to_string(i) + "]", item); !s.ok()) return s;
            out.push_back(std::move(item));
        }
        return Status::Ok();
    } else if constexpr (ViewType<T>) {
        if (!json.is_object()) return Wrong(path, "expected an object");
        Status status = Status::Ok();
        std::apply(
            [&](const auto&... field) {
                (
                    [&] {
                        if (!status.ok()) return;
                        auto& member = out.*(field.member);
                        const std::string at = Member(path, field.name);
                        const auto it = json.find(std::string(field.name));
                        if (it == json.end()) {
                            if constexpr (IsOptional<std::remove_cvref_t<decltype(member)>>::value) {
                                if (field.presence == Presence::kWhenSet) {
                                    member.reset();
                                    return;
                                }
                            }
                            status = Wrong(at, "missing");
                            return;
                        }
                        status = ReadValue(*it, at, member);
                    }(),
                    ...);
            },
            T::Fields());
        return status;
    } else if constexpr (std::is_same_v<T, bool>) {
        if (!json.is_boolean()) return Wrong(path, "expected true or false");
        out = json.get<bool>();
        return Status::Ok();
    } else if constexpr (std::is_same_v<T, std::int64_t>) {
        // An unsigned number above INT64_MAX is no integer of ours.
        if (!json.is_number_integer() || (json.is_number_unsigned() && json.get<std::uint64_t>() > INT64_MAX)) {
            return Wrong(path, "expected an integer");
        }
        out = json.get<std::int64_t>();
        return Status::Ok();
    } else if constexpr (std::is_same_v<T, std::string>) {
        if (!json.is_string()) return Wrong(path, "expected a string");
        out = json.get<std::string>();
        return Status::Ok();
    } else {
        static_assert(std::is_same_v<T, nlohmann::json>, "see ValueToJson");
        out = json;
        return Status::Ok();
    }
}

}  // namespace impl

/// The view as the API answers it.
template <ViewType T>
nlohmann::json ToJson(const T& view) {
    return impl::ValueToJson(view);
}

/// A view read from an answer. Fields the view does not know are ignored (a newer server may add
/// some); a known one that is missing (unless kWhenSet) or of the wrong type is kInvalidArgument
/// naming its path: "items[3].next_fire_time: expected an integer".
template <ViewType T>
Result<T> FromJson(const nlohmann::json& json) {
    T out{};
    if (Status s = impl::ReadValue(json, "", out); !s.ok()) return s;
    return out;
}

}  // namespace sched::api

/// The field table of a view whose members are all sent under their own names, always:
/// `SCHED_API_FIELDS(View, a, b)` is `static constexpr auto Fields() { return std::tuple{
/// Field("a", &View::a), Field("b", &View::b)}; }`. A preprocessor loop because C++20 cannot
/// name a member as a string any other way; up to 256 members.
#define SCHED_API_FIELDS(View, ...)                                                         \
    static constexpr auto Fields() {                                                        \
        return std::tuple{SCHED_API_IMPL_EXPAND(SCHED_API_IMPL_FIELDS(View, __VA_ARGS__))}; \
    }
#define SCHED_API_IMPL_FIELD(View, member) ::sched::api::Field(#member, &View::member)
#define SCHED_API_IMPL_FIELDS(View, member, ...) \
    SCHED_API_IMPL_FIELD(View, member)           \
    __VA_OPT__(, SCHED_API_IMPL_FIELDS_AGAIN SCHED_API_IMPL_PARENS(View, __VA_ARGS__))
#define SCHED_API_IMPL_FIELDS_AGAIN() SCHED_API_IMPL_FIELDS
#define SCHED_API_IMPL_PARENS ()
// Each level rescans its argument four times: 4^4 rescans, one per member.
#define SCHED_API_IMPL_EXPAND(...) \
    SCHED_API_IMPL_EXPAND3(SCHED_API_IMPL_EXPAND3(SCHED_API_IMPL_EXPAND3(SCHED_API_IMPL_EXPAND3(__VA_ARGS__))))
#define SCHED_API_IMPL_EXPAND3(...) \
    SCHED_API_IMPL_EXPAND2(SCHED_API_IMPL_EXPAND2(SCHED_API_IMPL_EXPAND2(SCHED_API_IMPL_EXPAND2(__VA_ARGS__))))
#define SCHED_API_IMPL_EXPAND2(...) \
    SCHED_API_IMPL_EXPAND1(SCHED_API_IMPL_EXPAND1(SCHED_API_IMPL_EXPAND1(SCHED_API_IMPL_EXPAND1(__VA_ARGS__))))
#define SCHED_API_IMPL_EXPAND1(...) __VA_ARGS__
