// The OpenAPI document's schemas against the view types the server writes its answers with
// (sched/api): each view's fields are its schema's properties, with the JSON type of the member;
// `required` lists exactly the fields every answer carries; `nullable` exactly the members that
// are written as null when empty. And every object an answer holds declares what it always has,
// so that generated clients do not treat every field as optional.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "impl/assets.hpp"
#include "sched/api/alerts.hpp"
#include "sched/api/audit.hpp"
#include "sched/api/backfills.hpp"
#include "sched/api/calendars.hpp"
#include "sched/api/cluster.hpp"
#include "sched/api/concurrency_keys.hpp"
#include "sched/api/fires.hpp"
#include "sched/api/jobs.hpp"
#include "sched/api/page.hpp"
#include "sched/api/tokens.hpp"
#include "sched/api/workflows.hpp"
#include "sched/http/error_body.hpp"

namespace sched::web {
namespace {

const nlohmann::json& Document() {
    static const nlohmann::json doc = [] {
        const auto* asset = impl::FindAsset("openapi.json");
        EXPECT_NE(asset, nullptr);
        return asset ? nlohmann::json::parse(asset->body) : nlohmann::json::object();
    }();
    return doc;
}

// `schema` with a $ref followed, and an allOf merged into one object schema (its parts'
// properties and required lists together).
nlohmann::json Resolve(const nlohmann::json& schema) {
    if (schema.contains("$ref")) {
        const std::string ref = schema["$ref"];
        return Resolve(Document()["components"]["schemas"][ref.substr(ref.rfind('/') + 1)]);
    }
    if (!schema.contains("allOf")) return schema;
    nlohmann::json merged = {{"type", "object"}, {"properties", nlohmann::json::object()}, {"required", {}}};
    for (const auto& part : schema["allOf"]) {
        const nlohmann::json resolved = Resolve(part);
        const nlohmann::json properties = resolved.value("properties", nlohmann::json::object());
        for (const auto& [key, value] : properties.items()) {
            merged["properties"][key] = value;
        }
        for (const auto& name : resolved.value("required", nlohmann::json::array())) merged["required"].push_back(name);
    }
    return merged;
}

// The member types as the views' JSON writer tells them apart.
using api::impl::IsOptional;
using api::impl::IsVector;

template <api::ViewType V>
void ExpectSchemaOf(const nlohmann::json& schema, const std::string& where);

// The property schema of a member of type T (optionals already unwrapped).
template <typename T>
void ExpectValueSchema(const nlohmann::json& property, const std::string& where) {
    const nlohmann::json schema = Resolve(property);
    if constexpr (IsVector<T>::value) {
        EXPECT_EQ(schema.value("type", ""), "array") << where;
        ASSERT_TRUE(schema.contains("items")) << where;
        ExpectValueSchema<typename T::value_type>(schema["items"], where + "[]");
    } else if constexpr (api::ViewType<T>) {
        ExpectSchemaOf<T>(schema, where);
    } else if constexpr (std::is_same_v<T, bool>) {
        EXPECT_EQ(schema.value("type", ""), "boolean") << where;
    } else if constexpr (std::is_same_v<T, std::int64_t>) {
        EXPECT_EQ(schema.value("type", ""), "integer") << where;
    } else if constexpr (std::is_same_v<T, std::string>) {
        EXPECT_EQ(schema.value("type", ""), "string") << where;
    } else {
        static_assert(std::is_same_v<T, nlohmann::json>);
        EXPECT_FALSE(schema.contains("type")) << where << ": any JSON value has no type";
    }
}

template <api::ViewType V>
void ExpectSchemaOf(const nlohmann::json& unresolved, const std::string& where) {
    const nlohmann::json schema = Resolve(unresolved);
    ASSERT_TRUE(schema.contains("properties")) << where;
    std::set<std::string> fields, always;
    std::apply(
        [&](const auto&... field) {
            (
                [&] {
                    using Member = std::remove_cvref_t<decltype(std::declval<V&>().*(field.member))>;
                    const std::string name(field.name);
                    const std::string at = where + "." + name;
                    fields.insert(name);
                    if (field.presence == api::Presence::kAlways) always.insert(name);
                    ASSERT_TRUE(schema["properties"].contains(name)) << at << ": a field of the view, not documented";
                    const auto& property = schema["properties"][name];
                    // Written as null when empty exactly when it is always there and optional.
                    const bool null_when_empty = IsOptional<Member>::value && field.presence == api::Presence::kAlways;
                    EXPECT_EQ(Resolve(property).value("nullable", false), null_when_empty) << at << ": nullable";
                    if constexpr (IsOptional<Member>::value) {
                        ExpectValueSchema<typename Member::value_type>(property, at);
                    } else {
                        ExpectValueSchema<Member>(property, at);
                    }
                }(),
                ...);
        },
        V::Fields());
    std::set<std::string> properties, required;
    for (const auto& [key, value] : schema["properties"].items()) properties.insert(key);
    for (const auto& name : schema.value("required", nlohmann::json::array())) required.insert(name);
    EXPECT_EQ(properties, fields) << where << ": the schema's properties are the view's fields";
    EXPECT_EQ(required, always) << where << ": required lists the fields every answer carries";
}

template <api::ViewType V>
void ExpectSchema(const char* name) {
    const auto& schemas = Document()["components"]["schemas"];
    ASSERT_TRUE(schemas.contains(name)) << name;
    ExpectSchemaOf<V>(schemas[name], name);
}

TEST(OpenApiRequired, EachAnswersSchemaIsItsViewTypeWithTheAlwaysPresentFieldsRequired) {
    ExpectSchema<api::JobView>("Job");
    ExpectSchema<api::Page<api::JobView>>("JobPage");
    ExpectSchema<api::FireView>("Fire");
    ExpectSchema<api::Page<api::FireView>>("FirePage");
    ExpectSchema<api::ItemList<api::FireView>>("FireList");
    ExpectSchema<api::FireLogView>("FireLog");
    ExpectSchema<api::CalendarView>("Calendar");
    ExpectSchema<api::Page<api::CalendarView>>("CalendarPage");
    ExpectSchema<api::ConcurrencyKeyView>("ConcurrencyKey");
    ExpectSchema<api::Page<api::ConcurrencyKeyView>>("ConcurrencyKeyList");
    ExpectSchema<api::WorkflowView>("Workflow");
    ExpectSchema<api::Page<api::WorkflowView>>("WorkflowPage");
    ExpectSchema<api::WorkflowRunView>("WorkflowRun");
    ExpectSchema<api::Page<api::WorkflowRunView>>("WorkflowRunPage");
    ExpectSchema<api::WorkflowRunDetailView>("WorkflowRunDetail");
    ExpectSchema<api::BackfillView>("Backfill");
    ExpectSchema<api::Page<api::BackfillView>>("BackfillPage");
    ExpectSchema<api::BackfillDryRunView>("BackfillDryRun");
    ExpectSchema<api::TokenView>("Token");
    ExpectSchema<api::ItemList<api::TokenView>>("TokenList");
    ExpectSchema<api::NewTokenView>("NewToken");
    ExpectSchema<api::ExecutorListView>("ExecutorList");
    ExpectSchema<api::ClusterView>("Cluster");
    ExpectSchema<api::AuditEntryView>("AuditEntry");
    ExpectSchema<api::AlertRuleView>("AlertRule");
    ExpectSchema<api::Page<api::AuditEntryView>>("AuditPage");
}

TEST(OpenApiRequired, TheErrorBodyAlwaysCarriesCodeMessageAndAFieldThatMayBeNull) {
    const nlohmann::json written = http::ErrorBody("not_found", "job 9 not found", "");
    const nlohmann::json schema = Resolve(Document()["components"]["schemas"]["Error"]);
    EXPECT_EQ(schema["required"], nlohmann::json({"error"}));
    const auto& error = schema["properties"]["error"];
    std::set<std::string> required(error["required"].begin(), error["required"].end());
    std::set<std::string> keys;
    for (const auto& [key, value] : written["error"].items()) keys.insert(key);
    EXPECT_EQ(required, keys);
    EXPECT_TRUE(written["error"]["field"].is_null());
    EXPECT_TRUE(error["properties"]["field"].value("nullable", false));
}

// Objects without a view type (the lock protocol's answers, the dashboard, previews, alerts):
// each declares `required`, and names only its own properties there.
void ExpectRequiredIn(const nlohmann::json& unresolved, const std::string& where, std::set<std::string>& seen) {
    if (unresolved.contains("$ref")) {
        const std::string ref = unresolved["$ref"];
        if (!seen.insert(ref).second) return;
    }
    const nlohmann::json schema = Resolve(unresolved);
    if (schema.value("type", "") == "object" && schema.contains("properties")) {
        EXPECT_FALSE(schema.value("required", nlohmann::json::array()).empty()) << where << ": no required list";
        for (const auto& name : schema.value("required", nlohmann::json::array())) {
            EXPECT_TRUE(schema["properties"].contains(name.get<std::string>())) << where << ": required " << name;
        }
        for (const auto& [key, value] : schema["properties"].items()) ExpectRequiredIn(value, where + "." + key, seen);
    }
    if (schema.contains("items")) ExpectRequiredIn(schema["items"], where + "[]", seen);
}

TEST(OpenApiRequired, EveryObjectAnAnswerHoldsDeclaresItsRequiredFields) {
    std::set<std::string> seen;
    std::size_t answers = 0;
    for (const auto& [path, operations] : Document()["paths"].items()) {
        for (const auto& [method, op] : operations.items()) {
            if (method == "parameters") continue;
            for (const auto& [status, response] : op["responses"].items()) {
                if (!response.contains("content") || !response["content"].contains("application/json")) continue;
                ++answers;
                ExpectRequiredIn(response["content"]["application/json"]["schema"], method + " " + path + " " + status,
                                 seen);
            }
        }
    }
    EXPECT_GT(answers, 50u);
}

}  // namespace
}  // namespace sched::web
