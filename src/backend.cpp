// Which backend the ops use. The reference backend until someone sets another.
#include "tinyformer/backend.hpp"

namespace tinyformer {

static std::unique_ptr<Backend>& current_backend() {
    static std::unique_ptr<Backend> instance = make_reference_backend();
    return instance;
}

Backend& backend() { return *current_backend(); }
void set_backend(std::unique_ptr<Backend> next) { current_backend() = std::move(next); }
std::unique_ptr<Backend> swap_backend(std::unique_ptr<Backend> next) {
    std::swap(current_backend(), next);
    return next;
}

}  // namespace tinyformer
