#include "bounded_yaml.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <charconv>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace sched::ctl {
namespace {

// A bound crossed at `mark`: thrown out of the parser's callbacks, caught in LoadBoundedYaml.
struct OverBound {
    YAML::Mark mark;
    std::string what;
};

// Counts what the document holds with every alias expanded, without expanding anything: an
// anchored node's totals are recorded when it ends, and an alias adds them.
class ExpansionCounter : public YAML::EventHandler {
  public:
    explicit ExpansionCounter(const YamlBounds& bounds) : bounds_(bounds) {}

    void OnDocumentStart(const YAML::Mark&) override {}
    void OnDocumentEnd() override {}

    void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Leaf(mark, anchor, 0); }
    void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  const std::string& value) override {
        if (value.size() > bounds_.max_scalar_bytes) {
            throw OverBound{mark, "a value of " + std::to_string(value.size()) + " bytes (at most " +
                                      std::to_string(bounds_.max_scalar_bytes) + ")"};
        }
        Leaf(mark, anchor, value.size());
    }
    void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
        const auto it = anchors_.find(anchor);
        // The parser knows the anchor (it refuses an unknown one), so an anchor without totals is
        // one still open: the alias stands inside the node it names.
        if (it == anchors_.end()) throw OverBound{mark, "an alias inside the node it refers to (a cycle)"};
        Add(mark, it->second.values, it->second.text_bytes, it->second.height);
    }
    void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                         YAML::EmitterStyle::value) override {
        Open(mark, anchor);
    }
    void OnSequenceEnd() override { Close(); }
    void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                    YAML::EmitterStyle::value) override {
        Open(mark, anchor);
    }
    void OnMapEnd() override { Close(); }

  private:
    struct Totals {
        std::size_t values = 0;
        std::size_t text_bytes = 0;
        std::size_t height = 0;  ///< collections nested inside, the node itself included
    };
    struct OpenNode {
        YAML::anchor_t anchor;
        std::size_t values_before;
        std::size_t text_before;
        std::size_t deepest;  ///< the deepest level reached inside so far
    };

    void Leaf(const YAML::Mark& mark, YAML::anchor_t anchor, std::size_t bytes) {
        Add(mark, 1, bytes, 0);
        if (anchor != YAML::NullAnchor) anchors_[anchor] = {1, bytes, 0};
    }
    void Open(const YAML::Mark& mark, YAML::anchor_t anchor) {
        Add(mark, 1, 0, 1);
        open_.push_back({anchor, values_ - 1, text_bytes_, open_.size() + 1});
    }
    void Close() {
        const OpenNode node = open_.back();
        open_.pop_back();
        if (!open_.empty()) open_.back().deepest = std::max(open_.back().deepest, node.deepest);
        if (node.anchor != YAML::NullAnchor) {
            anchors_[node.anchor] = {values_ - node.values_before, text_bytes_ - node.text_before,
                                     node.deepest - open_.size()};
        }
    }
    // `values` more values holding `bytes` of text and reaching `height` levels below the current one.
    void Add(const YAML::Mark& mark, std::size_t values, std::size_t bytes, std::size_t height) {
        values_ += values;
        text_bytes_ += bytes;
        const std::size_t level = open_.size() + height;
        if (!open_.empty()) open_.back().deepest = std::max(open_.back().deepest, level);
        if (values_ > bounds_.max_values) {
            throw OverBound{mark, "the document expands to more than " + std::to_string(bounds_.max_values) +
                                      " values (aliases included)"};
        }
        if (text_bytes_ > bounds_.max_text_bytes) {
            throw OverBound{mark, "the document's values expand to more than " +
                                      std::to_string(bounds_.max_text_bytes) + " bytes (aliases included)"};
        }
        if (level > bounds_.max_depth) {
            throw OverBound{mark,
                            "nesting deeper than " + std::to_string(bounds_.max_depth) + " levels (aliases included)"};
        }
    }

    const YamlBounds& bounds_;
    std::size_t values_ = 0;
    std::size_t text_bytes_ = 0;
    std::vector<OpenNode> open_;
    std::unordered_map<YAML::anchor_t, Totals> anchors_;
};

}  // namespace

Result<YAML::Node> LoadBoundedYaml(std::string_view text, std::string_view file_name, const YamlBounds& bounds) {
    const std::string file(file_name);
    const auto at = [&file](const YAML::Mark& mark, const std::string& what) {
        const std::string line = mark.is_null() ? std::string() : "line " + std::to_string(mark.line + 1) + ": ";
        return Status(Code::kInvalidArgument, file + ": " + line + what);
    };
    if (text.size() > bounds.max_bytes) {
        return Status(Code::kInvalidArgument, file + ": larger than " + std::to_string(bounds.max_bytes) + " bytes");
    }
    const std::string copy(text);
    try {
        std::istringstream in(copy);
        YAML::Parser parser(in);
        ExpansionCounter counter(bounds);
        parser.HandleNextDocument(counter);
        return YAML::Load(copy);
    } catch (const OverBound& e) {
        return at(e.mark, e.what);
    } catch (const YAML::Exception& e) {
        return at(e.mark, e.msg);
    }
}

// Quoted scalars carry the non-specific tag "!": the author wrote a string.
nlohmann::json ScalarToJson(const YAML::Node& node) {
    const std::string& text = node.Scalar();
    if (node.Tag() == "!") return text;
    if (text == "null" || text == "~" || text.empty()) return nullptr;
    if (text == "true") return true;
    if (text == "false") return false;
    std::int64_t i = 0;
    const char* end = text.data() + text.size();
    if (auto [p, ec] = std::from_chars(text.data(), end, i); ec == std::errc() && p == end) return i;
    double d = 0;
    if (auto [p, ec] = std::from_chars(text.data(), end, d); ec == std::errc() && p == end) return d;
    return text;
}

}  // namespace sched::ctl
