// tinyformer grads --checkpoint PATH --text FILE --out FILE: the loss and every parameter's
// gradient on the text's first window, as a safetensors file — the same thing
// scripts/torch_reference.py grads writes, so the two engines can be compared.
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tinyformer/data/dataset.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/json_number.hpp"
#include "tinyformer/train/checkpoint.hpp"

namespace tinyformer::cli {

Runner add_grads(CLI::App& app) {
    struct Args {
        std::string checkpoint, text, out;
    };
    auto args = std::make_shared<Args>();
    auto* cmd = app.add_subcommand("grads", "Write the loss and every parameter's gradient on a text's first window.");
    cmd->add_option("--checkpoint", args->checkpoint, "a .safetensors file or a run directory")->required();
    cmd->add_option("--text", args->text, "the text; its first window ids[0:T+1] is used")->required();
    cmd->add_option("--out", args->out, "the safetensors file to write")->required();
    return [cmd, args]() -> int {
        if (!cmd->parsed()) return -1;
        LoadedModel loaded = load_model(args->checkpoint);
        std::vector<int32_t> ids = loaded.vocab.encode(read_text(args->text), args->text);
        const int64_t n = std::min<int64_t>(static_cast<int64_t>(ids.size()), loaded.model->config().context + 1);
        if (n < 2) throw InputError(args->text + ": needs at least 2 characters");
        std::vector<int32_t> inputs(ids.begin(), ids.begin() + n - 1), targets(ids.begin() + 1, ids.begin() + n);
        Parameters& params = loaded.model->parameters();
        params.zero_grad();
        Tensor loss = loaded.model->loss(Tensor::ids(inputs, {1, n - 1}), Tensor::ids(targets, {1, n - 1}));
        loss.backward();
        NamedTensors grads;
        for (const auto& [name, p] : params.named()) grads.emplace_back(name, p.grad());
        std::sort(grads.begin(), grads.end(), [](auto& a, auto& b) { return a.first < b.first; });
        // The loss is a float32 tensor: its shortest decimal. One that is not finite (weights so
        // large that the forward overflows) is refused: no file, and no number JSON cannot hold.
        const float loss_value = static_cast<float>(loss.item());
        if (!std::isfinite(loss_value))
            throw std::runtime_error(args->checkpoint + ": the loss on " + args->text + "'s first window is " +
                                     (std::isnan(loss_value) ? "NaN" : "infinite") +
                                     " (the forward overflows float32); no gradients written");
        const nlohmann::json loss_json = json_number(loss_value);
        write_file_atomic(args->out, safetensors_bytes(grads, {{"loss", loss_json.dump()}}));
        // One JSON line, as the JSON library writes it (the path escaped; bytes that are not
        // UTF-8 replaced).
        const nlohmann::ordered_json line = {{"loss", loss_json}, {"out", args->out}};
        std::printf("%s\n", line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return kExitOk;
    };
}

}  // namespace tinyformer::cli
