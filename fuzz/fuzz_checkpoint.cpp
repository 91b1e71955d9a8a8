// libFuzzer target: any bytes as a checkpoint file. `tinyformer sample/eval --checkpoint`
// call load_model, which must either load the file or throw InputError (exit code 2). A
// crash, a sanitizer report, any other exception, a hang or an allocation past libFuzzer's
// memory limit is a bug. Seeds: fuzz/corpus/checkpoint (real checkpoints of tiny models).
#include <cstddef>
#include <cstdint>

#include "scratch_file.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/train/checkpoint.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string path = tinyformer::fuzz::write_scratch_file("model.safetensors", data, size);
    try {
        tinyformer::load_model(path);
    } catch (const tinyformer::InputError&) {
        // refused with a message: what a malformed file must get
    }
    return 0;
}
