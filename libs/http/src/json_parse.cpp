#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sched/http/message.hpp"

namespace sched::http {

namespace {

using nlohmann::json;

// Paths in messages are cut here: a key can be as long as the body.
constexpr std::size_t kMaxPathChars = 200;
constexpr std::size_t kMaxKeyChars = 64;
constexpr std::size_t kMaxTokenChars = 32;

std::string Printable(std::string_view s, std::size_t max) {
    std::string out;
    for (const char c : s.substr(0, max)) {
        const auto u = static_cast<unsigned char>(c);
        out += (u < 0x20 || u >= 0x7f) ? '?' : c;
    }
    if (s.size() > max) out += "...";
    return out;
}

// Builds the document from nlohmann's SAX events with an explicit stack (the parser itself is
// iterative), refusing to open a container beyond the depth limit, and keeps the path of the
// value being read so that errors can name it.
class BoundedDomBuilder {
  public:
    explicit BoundedDomBuilder(JsonLimits limits) : limits_(limits) {}

    bool null() { return Put(json(nullptr)); }
    bool boolean(bool v) { return Put(json(v)); }
    bool number_integer(json::number_integer_t v) { return Put(json(v)); }
    bool number_unsigned(json::number_unsigned_t v) { return Put(json(v)); }
    bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return Put(json(v)); }
    bool string(json::string_t& v) { return Put(json(std::move(v))); }
    bool binary(json::binary_t& /*v*/) {
        error_ = Where() + "binary values are not JSON";
        return false;
    }
    bool start_object(std::size_t /*elements*/) { return Open(json::object()); }
    bool key(json::string_t& k) {
        frames_.back().key = std::move(k);
        frames_.back().key_pending = true;
        return true;
    }
    bool end_object() { return Close(); }
    bool start_array(std::size_t /*elements*/) { return Open(json::array()); }
    bool end_array() { return Close(); }
    bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::json::exception& ex) {
        // ex.what() is nlohmann's internal text; only its id is used.
        if (ex.id == 406) {
            error_ = Where() + "number out of range (" + Printable(last_token, kMaxTokenChars) + ")";
        } else {
            syntax_position_ = position;
            syntax_where_ = Where();
        }
        return false;
    }

    json TakeRoot() { return std::move(root_); }
    const std::string& error() const { return error_; }
    std::size_t syntax_position() const { return syntax_position_; }
    const std::string& syntax_where() const { return syntax_where_; }

  private:
    struct Frame {
        json* container;
        std::string key;  // objects: the key of the value being read
        bool key_pending = false;
    };

    json* Insert(json&& v) {
        if (frames_.empty()) {
            root_ = std::move(v);
            return &root_;
        }
        Frame& top = frames_.back();
        if (top.container->is_object()) {
            top.key_pending = false;
            json& slot = (*top.container)[top.key];
            slot = std::move(v);
            return &slot;
        }
        // Only the innermost container grows while it is open, so pointers to the elements
        // of outer containers stay valid.
        top.container->push_back(std::move(v));
        return &top.container->back();
    }

    bool Put(json&& v) {
        Insert(std::move(v));
        return true;
    }

    bool Open(json&& container) {
        if (frames_.size() >= limits_.max_depth) {
            error_ = Where() + "nesting deeper than " + std::to_string(limits_.max_depth) + " levels";
            return false;
        }
        json* inserted = Insert(std::move(container));
        frames_.push_back(Frame{inserted, {}, false});
        return true;
    }

    bool Close() {
        frames_.pop_back();
        return true;
    }

    // "params.x: " for the value being read ("" at the top level).
    std::string Where() const {
        std::string path;
        for (std::size_t i = 0; i < frames_.size() && path.size() <= kMaxPathChars; ++i) {
            const Frame& f = frames_[i];
            const bool innermost = i + 1 == frames_.size();
            if (f.container->is_object()) {
                if (innermost && !f.key_pending) break;
                if (!path.empty()) path += '.';
                path += Printable(f.key, kMaxKeyChars);
            } else {
                // An enclosing array's open element is its last one; the innermost array's
                // value being read is not inserted yet.
                const std::size_t size = f.container->size();
                const std::size_t index = innermost ? size : (size == 0 ? 0 : size - 1);
                path += "[" + std::to_string(index) + "]";
            }
        }
        if (path.size() > kMaxPathChars) path = path.substr(0, kMaxPathChars) + "...";
        return path.empty() ? std::string() : path + ": ";
    }

    JsonLimits limits_;
    json root_;
    std::vector<Frame> frames_;
    std::string error_;
    std::size_t syntax_position_ = 0;
    std::string syntax_where_;
};

// Our own description of a syntax error, from the bytes around it (nlohmann's position is the
// count of bytes read, so the offending byte is the one before it).
std::string SyntaxError(std::string_view text, std::size_t position) {
    if (position == 0 || position > text.size()) return "malformed JSON: unexpected end of input";
    const auto c = static_cast<unsigned char>(text[position - 1]);
    const std::string at = " at byte " + std::to_string(position);
    if (c >= 0x80) return "invalid UTF-8" + at;
    if (c < 0x20) {
        static constexpr char kHex[] = "0123456789abcdef";
        return "malformed JSON" + at + ": control character \\x" + kHex[c >> 4] + kHex[c & 0xf] +
               " (inside a string it must be escaped)";
    }
    return "malformed JSON" + at + ": unexpected character '" + std::string(1, static_cast<char>(c)) + "'";
}

}  // namespace

Result<nlohmann::json> ParseJson(std::string_view text, JsonLimits limits) {
    if (text.empty()) return InvalidArgument("expected a JSON document, got an empty body");
    // nlohmann's lexer takes a NUL byte for the end of input and would ignore whatever follows;
    // a raw NUL is never valid JSON (inside a string it must be escaped).
    if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
        return InvalidArgument("malformed JSON at byte " + std::to_string(nul + 1) + ": NUL byte");
    }
    BoundedDomBuilder builder(limits);
    bool ok = false;
    try {
        ok = json::sax_parse(text.begin(), text.end(), &builder);
    } catch (const nlohmann::json::exception&) {
        // The builder never throws and nlohmann's parser reports through parse_error(); this is
        // only a guard against a library change turning input into a 500.
        return InvalidArgument("malformed JSON body");
    }
    if (ok) return builder.TakeRoot();
    if (!builder.error().empty()) return InvalidArgument(builder.error());
    return InvalidArgument(builder.syntax_where() + SyntaxError(text, builder.syntax_position()));
}

}  // namespace sched::http
