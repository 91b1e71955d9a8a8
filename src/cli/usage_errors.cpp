// The one line for a command line that CLI11 refused. CLI11's own messages say what is
// wrong but not where ("A subcommand is required" for `tinyformer fly`, "The following
// arguments were not expected: 1 --tempreature"); this names the word the user typed and the
// valid one nearest to it, as --set does for config keys.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "commands.hpp"
#include "tinyformer/support/suggest.hpp"
#include "tinyformer/train/config.hpp"

namespace tinyformer::cli {
namespace {

bool is_option(const std::string& arg) { return arg.size() > 1 && arg[0] == '-'; }

// "--steps=5" → "--steps".
std::string option_name(const std::string& arg) { return arg.substr(0, arg.find('=')); }

// Every spelling of every option of `command`: "--steps", "-h", ...
std::vector<std::string> option_names(const CLI::App& command) {
    std::vector<std::string> names;
    for (const CLI::Option* option : command.get_options()) {
        for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
        for (const std::string& name : option->get_snames()) names.push_back("-" + name);
    }
    return names;
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::App* command : app.get_subcommands({})) names.push_back(command->get_name());
    return names;
}

std::string joined(const std::vector<std::string>& words) {
    std::string text;
    for (const std::string& word : words) text += (text.empty() ? "" : ", ") + word;
    return text;
}

// " (did you mean `x`?)" or "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
    const std::string nearest = nearest_word(word, candidates);
    return nearest.empty() ? "" : " (did you mean `" + nearest + "`?)";
}

// For a subcommand that takes --set: an unknown `--steps 5` or `--stpes=5` is most likely a
// config key, so " (did you mean `--set train.steps=...`?)", or "".
std::string did_you_mean_set(const std::string& option, const CLI::App& command) {
    if (command.get_option_no_throw("--set") == nullptr) return "";
    const size_t start = option.find_first_not_of('-');
    if (start == std::string::npos) return "";
    std::string name = option.substr(start);
    std::replace(name.begin(), name.end(), '-', '_');
    std::vector<std::string> key_names;  // "steps" for "train.steps"
    const std::vector<std::string> keys = config_keys();
    for (const std::string& key : keys) key_names.push_back(key.substr(key.find('.') + 1));
    const std::string nearest = nearest_word(name, key_names);
    if (nearest.empty()) return "";
    const size_t index = std::find(key_names.begin(), key_names.end(), nearest) - key_names.begin();
    return " (did you mean `--set " + keys[index] + "=...`?)";
}

}  // namespace

std::string usage_error_message(const CLI::App& app, const CLI::ParseError& error,
                                const std::vector<std::string>& args) {
    const std::vector<std::string> subcommands = subcommand_names(app);
    // Before the subcommand only the program's own options (--help, --version) are valid,
    // and none of them takes a value: the first word that is not an option names the subcommand.
    auto command_word = std::find_if(args.begin(), args.end(), [](const std::string& a) { return !is_option(a); });
    const std::vector<std::string> program_options = option_names(app);
    for (auto arg = args.begin(); arg != command_word; ++arg)
        if (std::find(program_options.begin(), program_options.end(), option_name(*arg)) == program_options.end())
            return "unknown option `" + option_name(*arg) + "`" + did_you_mean(option_name(*arg), program_options) +
                   "; a subcommand's options come after it: tinyformer SUBCOMMAND --help";
    if (command_word == args.end())
        return "a subcommand is required, one of: " + joined(subcommands) + " (see --help)";
    if (std::find(subcommands.begin(), subcommands.end(), *command_word) == subcommands.end())
        return "unknown subcommand `" + *command_word + "`" + did_you_mean(*command_word, subcommands) +
               ", expected one of: " + joined(subcommands);

    const CLI::App* command = app.get_subcommand(*command_word);
    const std::string name = command->get_name();
    const std::string see_help = "see tinyformer " + name + " --help";
    // What CLI11 could not place, in the order the user typed it: an unknown option first
    // (its value is left over too), else a stray word. Checked whatever CLI11 complained of:
    // `sample --chekpoint x` is an unknown option, not a missing --checkpoint.
    const std::vector<std::string> left_over = app.remaining(true);
    const std::set<std::string> extras(left_over.begin(), left_over.end());
    const std::vector<std::string> valid = option_names(*command);
    for (auto arg = command_word + 1; arg != args.end(); ++arg) {
        const std::string unknown = option_name(*arg);
        if (!extras.count(*arg) || !is_option(*arg) || std::find(valid.begin(), valid.end(), unknown) != valid.end())
            continue;
        std::string suggestion = did_you_mean(unknown, valid);
        if (suggestion.empty()) suggestion = did_you_mean_set(unknown, *command);
        return name + ": unknown option `" + unknown + "`" + suggestion + "; " + see_help;
    }
    for (auto arg = command_word + 1; arg != args.end(); ++arg)
        if (extras.count(*arg))
            return name + ": unexpected argument `" + *arg + "` (every value follows its option, as in " +
                   "--name value; " + see_help + ")";
    return name + ": " + error.what() + " (" + see_help + ")";
}

}  // namespace tinyformer::cli
