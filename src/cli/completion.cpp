// tinyformer completion bash|zsh
//
// Prints a shell completion script made from the command line itself: every subcommand,
// option and description CLI11 knows when the script is asked for, so the script cannot
// go stale. Users run `source <(tinyformer completion bash)`; the build installs the same
// output as files.
//
// The scripts complete subcommand names, each subcommand's options, and option values:
// the choices of a CLI11 validator (IsMember), file and directory names, and config keys
// for --set/--vary, after `--option value` and `--option=value` alike. CLI11 does not say which plain string options name files, nor the
// choices of options that check their value at run time (--backend), so a few small tables
// below say so by option name.
#include <cctype>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "commands.hpp"
#include "tinyformer/train/config.hpp"

namespace tinyformer::cli {

namespace {

// ---------------------------------------------------------------------------------------
// What the scripts need to know, read from the CLI11 app.

// What a value (of an option, or a positional argument) completes to.
enum class ValueKind { Nothing, Choices, Files, TomlFiles, Directories, ConfigKeys };

struct ValueCompletion {
    ValueKind kind = ValueKind::Nothing;
    std::vector<std::string> choices;  // with ValueKind::Choices
};

// One option or positional argument of a command.
struct ArgumentSpec {
    std::vector<std::string> names;  // "-h", "--help"; empty for a positional argument
    std::string label;               // "config" for --config, "text" for positional TEXT
    std::string description;
    bool takes_value = false;        // an option with a value, not a flag
    bool repeatable = false;         // --set a=1 --set b=2
    ValueCompletion value;
};

// The top-level program (name "tinyformer") or one subcommand.
struct CommandSpec {
    std::string name, description;
    std::vector<ArgumentSpec> options, positionals;
};

// Options whose value names something CLI11 sees only as a string. Keyed by long name
// (or, for a positional argument, by its name).
const std::set<std::string> kTomlFileOptions = {"--config"};
const std::set<std::string> kFileOptions = {"--checkpoint", "--out", "--text", "--probes", "--train", "--val", "--html",
                                            "text" /* prepare TEXT */};
const std::set<std::string> kDirectoryOptions = {"--resume", "--collect"};
const std::set<std::string> kConfigKeyOptions = {"--set", "--vary"};  // KEY=VALUE
// Options that check their choices at run time rather than with a CLI11 validator.
const std::map<std::string, std::vector<std::string>> kChoicesOfOption = {{"--backend", {"onednn", "reference"}}};

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> parts(1);
    for (char c : text) {
        if (c == separator) parts.emplace_back();
        else parts.back() += c;
    }
    return parts;
}

std::string join(const std::vector<std::string>& words, const std::string& separator) {
    std::string out;
    for (const std::string& word : words) out += (out.empty() ? "" : separator) + word;
    return out;
}

// The choices of an IsMember validator. CLI11 has no portable accessor for them, but every
// version since 2.0 writes them into the option's type name, as help shows it:
// "TEXT:{terminal}" (one ":"-separated part per validator; a Transformer's map as {a->b,...}).
std::vector<std::string> choices_of_validators(const CLI::Option& option) {
    for (const std::string& part : split(option.get_type_name(), ':')) {
        if (part.size() < 2 || part.front() != '{' || part.back() != '}') continue;
        std::vector<std::string> choices;
        for (const std::string& item : split(part.substr(1, part.size() - 2), ','))
            choices.push_back(item.substr(0, item.find("->")));
        return choices;
    }
    return {};
}

ValueCompletion value_completion_of(const CLI::Option& option, const std::string& key) {
    ValueCompletion value;
    value.choices = choices_of_validators(option);
    if (value.choices.empty() && kChoicesOfOption.count(key)) value.choices = kChoicesOfOption.at(key);
    // CLI11's own file validators and ->type_name("FILE"/"DIR") name the value's kind.
    const std::string type = split(option.get_type_name(), ':').front();
    if (!value.choices.empty()) value.kind = ValueKind::Choices;
    else if (kConfigKeyOptions.count(key)) value.kind = ValueKind::ConfigKeys;
    else if (kTomlFileOptions.count(key)) value.kind = ValueKind::TomlFiles;
    else if (kDirectoryOptions.count(key) || type == "DIR") value.kind = ValueKind::Directories;
    else if (kFileOptions.count(key) || type == "FILE" || type.rfind("PATH", 0) == 0) value.kind = ValueKind::Files;
    return value;
}

CommandSpec command_spec(const CLI::App& command) {
    CommandSpec spec{command.get_name(), command.get_description(), {}, {}};
    for (const CLI::Option* option : command.get_options()) {
        if (option->get_group().empty()) continue;  // hidden
        ArgumentSpec argument;
        argument.description = option->get_description();
        // A flag has no value: type size 0 (or, for some flags, 0 values expected).
        argument.takes_value = option->get_type_size() > 0 && option->get_expected_max() > 0;
        argument.repeatable = option->get_expected_max() > 1;  // a vector: repeatable, several values
        if (option->nonpositional()) {
            for (const std::string& name : option->get_snames()) argument.names.push_back("-" + name);
            for (const std::string& name : option->get_lnames()) argument.names.push_back("--" + name);
            // Tables are keyed by the first long name ("--config"), else the short one ("-c").
            const std::string key =
                option->get_lnames().empty() ? argument.names.front() : "--" + option->get_lnames().front();
            argument.label = key.substr(key.find_first_not_of('-'));
            argument.value = value_completion_of(*option, key);
            spec.options.push_back(argument);
        } else if (option->get_positional()) {
            argument.label = option->get_name(true);
            argument.value = value_completion_of(*option, argument.label);
            spec.positionals.push_back(argument);
        }
    }
    return spec;
}

std::string one_line(std::string text) {
    for (char& c : text)
        if (c == '\n' || c == '\t') c = ' ';
    return text;
}

// 'text' for the shell: nothing inside single quotes is special but the quote itself.
std::string single_quoted(const std::string& text) {
    std::string out = "'";
    for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// A word that means itself in a compgen -W list or a zsh (a b c) action: backslashes
// before anything but letters, digits and a few safe punctuation marks.
std::string escaped_word(const std::string& word) {
    std::string out;
    for (char c : word) {
        const bool plain = std::isalnum(static_cast<unsigned char>(c)) || std::string("._-+/,@%=").find(c) != std::string::npos;
        if (!plain) out += '\\';
        out += c;
    }
    return out;
}

std::vector<std::string> escaped_words(const std::vector<std::string>& words) {
    std::vector<std::string> out;
    for (const std::string& word : words) out.push_back(escaped_word(word));
    return out;
}

// ---------------------------------------------------------------------------------------
// bash: one function per subcommand; `case $prev` completes option values, then options or
// the next positional argument.

std::string bash_value_action(const ValueCompletion& value) {
    switch (value.kind) {
        case ValueKind::Choices: return "_tinyformer_words " + single_quoted(join(escaped_words(value.choices), " "));
        case ValueKind::Files: return "_tinyformer_files";
        case ValueKind::TomlFiles: return "_tinyformer_toml_files";
        case ValueKind::Directories: return "_tinyformer_directories";
        case ValueKind::ConfigKeys: return "_tinyformer_config_keys";
        case ValueKind::Nothing: break;
    }
    return "";
}

// "--config) _tinyformer_toml_files; return ;;"
std::string bash_case_branch(const std::string& pattern, const std::string& action) {
    if (action.empty()) return pattern + ") return ;;  # the user's own value: nothing to offer";
    return pattern + ") " + action + "; return ;;";
}

// `case $prev in --config) ...; return ;; esac`: the value after an option, grouped by
// action so that options completing alike share one pattern.
std::string bash_option_value_cases(const std::vector<ArgumentSpec>& options) {
    std::vector<std::pair<std::string, std::vector<std::string>>> names_by_action;
    for (const ArgumentSpec& option : options) {
        if (!option.takes_value) continue;
        const std::string action = bash_value_action(option.value);
        auto group = names_by_action.begin();
        while (group != names_by_action.end() && group->first != action) ++group;
        if (group == names_by_action.end()) group = names_by_action.insert(group, {action, {}});
        group->second.insert(group->second.end(), option.names.begin(), option.names.end());
    }
    if (names_by_action.empty()) return "";
    std::string out = "    case $prev in\n";
    for (const auto& [action, names] : names_by_action) out += "        " + bash_case_branch(join(names, "|"), action) + "\n";
    return out + "    esac\n";
}

std::vector<std::string> option_names(const std::vector<ArgumentSpec>& options) {
    std::vector<std::string> names;
    for (const ArgumentSpec& option : options) names.insert(names.end(), option.names.begin(), option.names.end());
    return names;
}

std::vector<std::string> value_option_names(const std::vector<ArgumentSpec>& options) {
    std::vector<std::string> names;
    for (const ArgumentSpec& option : options)
        if (option.takes_value) names.insert(names.end(), option.names.begin(), option.names.end());
    return names;
}

std::string bash_command_function(const CommandSpec& command) {
    std::string out = "# tinyformer " + command.name + ": " + one_line(command.description) + "\n";
    out += "_tinyformer_" + command.name + "() {\n";
    out += bash_option_value_cases(command.options);
    out += "    (( after_equals )) && return  # --flag=: a flag takes no value\n";
    if (!command.positionals.empty()) {
        out += "    if [[ $cur != -* ]]; then\n";
        out += "        case $(_tinyformer_positional_count \"$command_index\" " +
               single_quoted(join(value_option_names(command.options), " ")) + ") in\n";
        for (size_t i = 0; i < command.positionals.size(); ++i) {
            const ArgumentSpec& positional = command.positionals[i];
            // A repeatable positional takes every word from its position on.
            const std::string pattern = positional.repeatable ? "*" : std::to_string(i);
            out += "            " + bash_case_branch(pattern, bash_value_action(positional.value)) + "  # " +
                   positional.label + "\n";
            if (positional.repeatable) break;
        }
        out += "        esac\n    fi\n";
    }
    out += "    _tinyformer_words " + single_quoted(join(option_names(command.options), " ")) + "\n}\n";
    return out;
}

std::string bash_script(const CommandSpec& program, const std::vector<CommandSpec>& commands) {
    std::vector<std::string> command_names;
    for (const CommandSpec& command : commands) command_names.push_back(command.name);
    std::string out =
        "# bash completion for tinyformer, generated by `tinyformer completion bash` from the program's\n"
        "# own command line: regenerate it after upgrading tinyformer.\n"
        "#\n"
        "# Load it in this shell:   source <(tinyformer completion bash)\n"
        "# Install it for the user: tinyformer completion bash > ~/.local/share/bash-completion/completions/tinyformer\n"
        "# (or source it from ~/.bashrc).\n"
        "\n"
        "# Every config key, offered as KEY= after --set and --vary.\n"
        "_tinyformer_config_key_list=" + single_quoted(join(config_keys(), " ")) + "\n"
        "\n"
        "# Helpers: each fills COMPREPLY from $cur, the word being completed.\n"
        "_tinyformer_words() {\n"
        "    mapfile -t COMPREPLY < <(compgen -W \"$1\" -- \"$cur\")\n"
        "}\n"
        "_tinyformer_config_keys() {\n"
        "    mapfile -t COMPREPLY < <(compgen -W \"$_tinyformer_config_key_list\" -S = -- \"$cur\")\n"
        "    compopt -o nospace 2>/dev/null  # the value follows the =\n"
        "}\n"
        "_tinyformer_files() {\n"
        "    compopt -o filenames 2>/dev/null  # quote names, mark directories with /\n"
        "    files=1\n"
        "    mapfile -t COMPREPLY < <(compgen -f -- \"$cur\")\n"
        "}\n"
        "_tinyformer_toml_files() {\n"
        "    compopt -o filenames 2>/dev/null\n"
        "    files=1\n"
        "    mapfile -t COMPREPLY < <(compgen -d -- \"$cur\"; compgen -f -X '!*.toml' -- \"$cur\")\n"
        "}\n"
        "_tinyformer_directories() {\n"
        "    compopt -o filenames 2>/dev/null\n"
        "    files=1\n"
        "    mapfile -t COMPREPLY < <(compgen -d -- \"$cur\")\n"
        "}\n"
        "# How many positional arguments stand between the subcommand (word $1) and the cursor;\n"
        "# $2 lists the options that take a value, whose values do not count. COMP_WORDS splits\n"
        "# --opt=value at the =, so \"=\" and the word after it are an option's value too.\n"
        "_tinyformer_positional_count() {\n"
        "    local i word count=0\n"
        "    for ((i = $1 + 1; i < COMP_CWORD; i++)); do\n"
        "        word=${COMP_WORDS[i]}\n"
        "        if [[ \" $2 \" == *\" $word \"* ]]; then\n"
        "            i=$((i + 1))\n"
        "        elif [[ $word != -* && $word != = && ${COMP_WORDS[i-1]} != = ]]; then\n"
        "            count=$((count + 1))\n"
        "        fi\n"
        "    done\n"
        "    echo \"$count\"\n"
        "}\n"
        "\n";
    for (const CommandSpec& command : commands) out += bash_command_function(command) + "\n";

    out += "# The entry point. cur, prev, command_index, after_equals and files are seen by the\n"
           "# functions above.\n"
           "_tinyformer() {\n"
           "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
           "    local command=\"\" command_index=0 i after_equals=0 option_prefix=\"\" files=0\n"
           "    COMPREPLY=()\n"
           "    # --option=value completes as --option value: prev the option, cur the value so far.\n"
           "    # Bash splits the word at the = (COMP_WORDBREAKS holds \"=\" by default): \"--config\" \"=\"\n"
           "    # \"ti\", or \"--config\" \"=\" with nothing after the = yet; a reply replaces what follows\n"
           "    # the =. Without \"=\" in COMP_WORDBREAKS it is one word, which a reply replaces whole.\n"
           "    if [[ $cur == = && $prev == -* ]]; then\n"
           "        cur=\"\" after_equals=1\n"
           "    elif [[ $prev == = && ${COMP_WORDS[COMP_CWORD-2]} == -* ]]; then\n"
           "        prev=${COMP_WORDS[COMP_CWORD-2]} after_equals=1\n"
           "    elif [[ $cur == --*=* ]]; then\n"
           "        prev=${cur%%=*} option_prefix=${cur%%=*}= cur=${cur#*=} after_equals=1\n"
           "    fi\n"
           "    # The subcommand is the first word that is neither an option nor an option's value.\n"
           "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
           "        case ${COMP_WORDS[i]} in\n";
    const std::vector<std::string> program_value_options = value_option_names(program.options);
    if (!program_value_options.empty())  // its value is the next word, or follows an = (below)
        out += "            " + join(program_value_options, "|") + ") [[ ${COMP_WORDS[i+1]} == = ]] || i=$((i + 1)) ;;\n";
    out += "            =) i=$((i + 1)) ;;  # --option=value, split at the =: the value\n"
           "            -*) ;;\n"
           "            *) command=${COMP_WORDS[i]} command_index=$i; break ;;\n"
           "        esac\n"
           "    done\n"
           "    case $command in\n"
           "        \"\")\n";
    std::string program_cases = bash_option_value_cases(program.options);
    // Indent the top level's `case $prev` to sit inside this branch.
    for (const std::string& line : split(program_cases, '\n'))
        if (!line.empty()) out += "        " + line + "\n";
    out += "            if (( after_equals )); then\n"
           "                :  # --flag=: a flag takes no value\n"
           "            elif [[ $cur == -* ]]; then\n"
           "                _tinyformer_words " + single_quoted(join(option_names(program.options), " ")) + "\n"
           "            else\n"
           "                _tinyformer_words " + single_quoted(join(command_names, " ")) + "\n"
           "            fi ;;\n";
    for (const CommandSpec& command : commands)
        out += "        " + command.name + ") _tinyformer_" + command.name + " ;;\n";
    out += "    esac\n"
           "    # --option=value in one word: each reply carries the --option=, and a directory the /\n"
           "    # that -o filenames adds only to a reply that names one.\n"
           "    if [[ -n $option_prefix ]]; then\n"
           "        for i in \"${!COMPREPLY[@]}\"; do\n"
           "            if (( files )) && [[ -d ${COMPREPLY[i]} ]]; then\n"
           "                COMPREPLY[i]+=/\n"
           "                compopt -o nospace 2>/dev/null\n"
           "            fi\n"
           "            COMPREPLY[i]=$option_prefix${COMPREPLY[i]}\n"
           "        done\n"
           "    fi\n"
           "}\n"
           "complete -F _tinyformer tinyformer\n";
    return out;
}

// ---------------------------------------------------------------------------------------
// zsh: _arguments specs, one function per subcommand, and _describe for the subcommands.

// Text inside an _arguments spec: [description] and :message: end at an unescaped ] or :.
std::string zsh_spec_text(const std::string& text) {
    std::string out;
    for (char c : one_line(text)) {
        if (c == '\\' || c == '[' || c == ']' || c == ':') out += '\\';
        out += c;
    }
    return out;
}

std::string zsh_value_action(const ValueCompletion& value) {
    switch (value.kind) {
        case ValueKind::Choices: return "(" + join(escaped_words(value.choices), " ") + ")";
        case ValueKind::Files: return "_files";
        case ValueKind::TomlFiles: return "_files -g \"*.toml\"";  // and directories, as _files always offers
        case ValueKind::Directories: return "_files -/";
        case ValueKind::ConfigKeys: return "_tinyformer_config_keys";
        case ValueKind::Nothing: break;
    }
    return " ";  // show the message, offer nothing
}

// One _arguments spec, as shell words: '(-h --help)'{-h,--help}'[Print this help]'. A long
// option with a value is written --config=, which _arguments reads as "the value follows an
// = in the same word, or is the next word": --config=x and --config x both complete x.
std::string zsh_option_spec(const ArgumentSpec& option) {
    std::string rest = "[" + zsh_spec_text(option.description) + "]";
    if (option.takes_value) rest += ":" + zsh_spec_text(option.label) + ":" + zsh_value_action(option.value);
    std::vector<std::string> names;
    for (const std::string& name : option.names)
        names.push_back(option.takes_value && name.rfind("--", 0) == 0 ? name + "=" : name);
    const std::string repeat = option.repeatable ? "*" : "";
    if (names.size() == 1) return single_quoted(repeat + names.front() + rest);
    // Several names: they exclude each other (unless repeatable); brace expansion writes one spec each.
    const std::string exclusions = option.repeatable ? "*" : "(" + join(option.names, " ") + ")";
    return single_quoted(exclusions) + "{" + join(names, ",") + "}" + single_quoted(rest);
}

std::string zsh_positional_spec(const ArgumentSpec& positional, size_t index) {
    const std::string position = positional.repeatable ? "*" : std::to_string(index + 1);
    return single_quoted(position + ":" + zsh_spec_text(positional.label) + ":" + zsh_value_action(positional.value));
}

// "_arguments \<newline> spec \<newline> spec": the command's options and positional arguments,
// then `extra_specs`; no newline at the end.
std::string zsh_arguments_call(const std::string& arguments_flags, const CommandSpec& command,
                               const std::vector<std::string>& extra_specs) {
    std::vector<std::string> specs;
    for (const ArgumentSpec& option : command.options) specs.push_back(zsh_option_spec(option));
    for (size_t i = 0; i < command.positionals.size(); ++i) specs.push_back(zsh_positional_spec(command.positionals[i], i));
    specs.insert(specs.end(), extra_specs.begin(), extra_specs.end());
    std::string out = "    _arguments" + (arguments_flags.empty() ? "" : " " + arguments_flags);
    for (const std::string& spec : specs) out += " \\\n        " + spec;
    return out;
}

std::string zsh_script(const CommandSpec& program, const std::vector<CommandSpec>& commands) {
    std::string out =
        "#compdef tinyformer\n"
        "# zsh completion for tinyformer, generated by `tinyformer completion zsh` from the program's\n"
        "# own command line: regenerate it after upgrading tinyformer.\n"
        "#\n"
        "# Install it: save it as _tinyformer in a directory on $fpath before compinit runs, e.g.\n"
        "#   tinyformer completion zsh > ~/.zfunc/_tinyformer   # with fpath=(~/.zfunc $fpath) in ~/.zshrc\n"
        "# Or load it in this shell, after compinit:\n"
        "#   source <(tinyformer completion zsh)\n"
        "\n"
        "# Every config key, offered as KEY= after --set and --vary.\n"
        "_tinyformer_config_keys() {\n"
        "    local -a keys=(\n";
    for (const std::string& key : config_keys()) out += "        " + escaped_word(key) + "\n";
    out += "    )\n"
           "    _wanted config-keys expl 'config key' compadd -S '' -- ${^keys}=  # the value follows the =, no space\n"
           "}\n"
           "\n"
           "_tinyformer_commands() {\n"
           "    local -a commands=(\n";
    for (const CommandSpec& command : commands)
        out += "        " + single_quoted(zsh_spec_text(command.name) + ":" + one_line(command.description)) + "\n";
    out += "    )\n"
           "    _describe -t commands 'tinyformer command' commands\n"
           "}\n"
           "\n";
    for (const CommandSpec& command : commands) {
        out += "# tinyformer " + command.name + ": " + one_line(command.description) + "\n";
        out += "_tinyformer_" + command.name + "() {\n" + zsh_arguments_call("", command, {}) + "\n}\n\n";
    }
    out += "# The entry point: the top-level options and the subcommand, then that subcommand's own\n"
           "# function on the words from the subcommand on.\n"
           "_tinyformer() {\n"
           "    local curcontext=$curcontext state state_descr line ret=1\n"
           "    typeset -A opt_args\n";
    // -C: the state (->command_argument) may change $curcontext.
    out += zsh_arguments_call("-C", program, {"'1: :_tinyformer_commands'", "'*:: :->command_argument'"}) +
           " && ret=0\n";
    out += "    if [[ $state == command_argument ]]; then\n"
           "        curcontext=${curcontext%:*:*}:tinyformer-$words[1]:\n"
           "        case $words[1] in\n";
    for (const CommandSpec& command : commands)
        out += "            " + command.name + ") _tinyformer_" + command.name + " && ret=0 ;;\n";
    out += "        esac\n"
           "    fi\n"
           "    return ret\n"
           "}\n"
           "\n"
           "# Autoloaded from $fpath, this file is the body of _tinyformer: complete now. Sourced,\n"
           "# register the function (compinit must have run).\n"
           "if [[ $funcstack[1] == _tinyformer ]]; then\n"
           "    _tinyformer \"$@\"\n"
           "elif (( $+functions[compdef] )); then\n"
           "    compdef _tinyformer tinyformer\n"
           "else\n"
           "    print -u2 'tinyformer completion: run \"autoload -U compinit && compinit\" first'\n"
           "fi\n";
    return out;
}

}  // namespace

Runner add_completion(CLI::App& app) {
    auto shell = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand("completion", "Print a shell completion script: source <(tinyformer completion bash)");
    cmd->add_option("shell", *shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));
    cmd->footer("bash: tinyformer completion bash > ~/.local/share/bash-completion/completions/tinyformer\n"
                "zsh:  tinyformer completion zsh > DIR/_tinyformer, DIR on $fpath before compinit");
    CLI::App* program = &app;
    return [cmd, shell, program]() -> int {
        if (!cmd->parsed()) return -1;
        // Read at run time, when every subcommand (this one included) has been added.
        const CommandSpec program_spec = command_spec(*program);
        std::vector<CommandSpec> commands;
        for (const CLI::App* command : program->get_subcommands({}))
            if (!command->get_group().empty()) commands.push_back(command_spec(*command));  // skip hidden ones
        const std::string script = *shell == "bash" ? bash_script(program_spec, commands) : zsh_script(program_spec, commands);
        std::fputs(script.c_str(), stdout);
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
