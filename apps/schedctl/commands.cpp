#include "commands.hpp"

namespace sched::ctl {

CLI::App* AddCommand(CLI::App& parent, const std::string& name, const std::string& description, CommandLine& line,
                     Command command) {
    CLI::App* app = parent.add_subcommand(name, description);
    app->callback([&line, command = std::move(command)] { line.chosen = command; });
    return app;
}

CLI::App* AddFamily(CLI::App& parent, const std::string& name, const std::string& description) {
    return parent.add_subcommand(name, description);
}

void TakesArguments(CLI::App& command, const std::string& name, CommandLine& line, const std::string& description) {
    // One argument: a second is "unexpected", not silently dropped.
    command.add_option(name, line.options.args, description)->expected(0, 1);
}

CLI::Option* AddValue(CLI::App& app, const std::string& names, std::optional<std::string>& target,
                      const std::string& description) {
    return app.add_option_function<std::string>(
        names, [&target](const std::string& value) { target = value; }, description);
}

void AddFileOption(CLI::App& app, CommandLine& line, const std::string& description) {
    app.add_option("-f,--file", line.options.file, description);
}

void OnlyFor(CLI::App& family, const std::string& name, const std::string& message, CommandLine& line) {
    family
        .add_option_function<std::string>(
            name,
            [&line, message](const std::string&) {
                if (line.misplaced.empty()) line.misplaced = message;
            },
            "")
        ->group("");
}

}  // namespace sched::ctl
