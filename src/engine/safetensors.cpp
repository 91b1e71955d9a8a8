// The safetensors format (https://github.com/huggingface/safetensors), f32 only:
//
//   [8 bytes]  N, the header length, a little-endian u64
//   [N bytes]  a JSON object: {"__metadata__":{string: string},
//                              "<name>":{"dtype":"F32","shape":[...],"data_offsets":[begin,end]}, ...}
//              padded with spaces so that the data starts at a multiple of 8
//   [the rest] the tensors' raw little-endian data; data_offsets count from its start
//
// The reader trusts nothing in the file: every number is checked against the file's real
// size before it decides an allocation or a read.
#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "tinyformer/engine/safetensors.hpp"
#include "tinyformer/support/errors.hpp"
#include "tinyformer/support/utf8.hpp"

namespace tinyformer {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this code copies it as it lies in memory");

namespace {

constexpr uint64_t max_header_bytes = 100ull << 20;  // 100 MB, the limit the safetensors library uses
constexpr int max_header_depth = 64;                // our headers nest 3 levels deep
constexpr int64_t max_header_events = 1'000'000;    // keys, values, brackets: ~10 per tensor
constexpr uint64_t max_tensor_elements = 1ull << 61; // far beyond any file; 4x it still fits in 64 bits

// What a JSON value is, for messages: "an array", "the number 5", ...
std::string kind_of(const nlohmann::ordered_json& value) {
    switch (value.type()) {
        case nlohmann::json::value_t::null: return "null";
        case nlohmann::json::value_t::object: return "an object";
        case nlohmann::json::value_t::array: return "an array";
        case nlohmann::json::value_t::string: return "a string";
        case nlohmann::json::value_t::boolean: return "a boolean";
        case nlohmann::json::value_t::number_integer:
        case nlohmann::json::value_t::number_unsigned:
        case nlohmann::json::value_t::number_float: return "the number " + value.dump();
        default: return "not JSON data";
    }
}

// A JSON integer in 0..limit, or nothing.
bool read_count(const nlohmann::ordered_json& value, uint64_t limit, uint64_t& out) {
    if (value.is_number_unsigned()) out = value.get<uint64_t>();
    else if (value.is_number_integer() && value.get<int64_t>() >= 0) out = static_cast<uint64_t>(value.get<int64_t>());
    else return false;
    return out <= limit;
}

void append_u64_le(std::string& out, uint64_t value) {
    for (int i = 0; i < 8; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

uint64_t read_u64_le(const unsigned char* bytes) {
    uint64_t value = 0;
    for (int i = 0; i < 8; ++i) value |= static_cast<uint64_t>(bytes[i]) << (8 * i);
    return value;
}

// The number of elements of `shape`, or limit + 1 as soon as it passes `limit`: a shape
// from a file may multiply out past 2^64, this never does.
uint64_t capped_product(const Shape& shape, uint64_t limit) {
    if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
    uint64_t product = 1;
    for (int64_t extent : shape) {
        if (product > limit / static_cast<uint64_t>(extent)) return limit + 1;
        product *= static_cast<uint64_t>(extent);
    }
    return product;
}

// One tensor's header entry, checked.
struct TensorEntry {
    std::string name;
    Shape shape;
    uint64_t begin = 0, end = 0;  // within the data section
};

TensorEntry check_entry(const std::string& path, const std::string& name, const nlohmann::ordered_json& info,
                        uint64_t data_bytes) {
    const std::string tensor = "tensor " + name;
    if (!info.is_object()) reject(path, tensor + " is " + kind_of(info), "an object with dtype, shape and data_offsets");
    for (const char* key : {"dtype", "shape", "data_offsets"})
        if (!info.contains(key)) reject(path, tensor + " has no " + key, "dtype, shape and data_offsets");

    const auto& dtype = info["dtype"];
    if (!dtype.is_string()) reject(path, tensor + ": dtype is " + kind_of(dtype), "\"F32\"");
    if (dtype.get<std::string>() != "F32") reject(path, tensor + ": dtype " + dtype.get<std::string>(), "F32");

    TensorEntry entry{name, {}, 0, 0};
    const auto& offsets = info["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !read_count(offsets[0], data_bytes, entry.begin) ||
        !read_count(offsets[1], data_bytes, entry.end))
        reject(path, tensor + ": data_offsets " + offsets.dump(),
             "[begin,end] within the " + std::to_string(data_bytes) + "-byte data section");
    if (entry.begin > entry.end)
        reject(path, tensor + ": data_offsets " + offsets.dump() + " run backwards", "begin <= end");

    const auto& shape = info["shape"];
    if (!shape.is_array()) reject(path, tensor + ": shape is " + kind_of(shape), "an array of sizes");
    for (const auto& extent : shape) {
        uint64_t size = 0;
        if (!read_count(extent, std::numeric_limits<int64_t>::max(), size))
            reject(path, tensor + ": shape " + shape.dump(), "non-negative integer sizes");
        entry.shape.push_back(static_cast<int64_t>(size));
    }
    const uint64_t elements = capped_product(entry.shape, max_tensor_elements);
    if (elements > max_tensor_elements)
        reject(path, tensor + ": shape " + shape_str(entry.shape) + " is too large", "at most 2^61 elements");
    const uint64_t span = entry.end - entry.begin;
    if (elements * 4 != span)
        reject(path, tensor + ": shape " + shape_str(entry.shape) + " needs " + std::to_string(elements * 4) +
                       " bytes, data_offsets " + offsets.dump() + " hold " + std::to_string(span),
             "shape and data_offsets to agree");
    return entry;
}

// The tensors must tile the data section exactly: from byte 0, no gaps, no overlaps, no rest.
void check_tiling(const std::string& path, std::vector<TensorEntry> entries, uint64_t data_bytes) {
    std::stable_sort(entries.begin(), entries.end(), [](const TensorEntry& a, const TensorEntry& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    uint64_t next = 0;
    std::string previous = "the start of the data";
    for (const TensorEntry& entry : entries) {
        if (entry.begin < next)
            reject(path, "tensor " + entry.name + " (bytes " + std::to_string(entry.begin) + ".." +
                           std::to_string(entry.end) + ") overlaps " + previous,
                 "non-overlapping tensors");
        if (entry.begin > next)
            reject(path, "a gap of " + std::to_string(entry.begin - next) + " bytes before tensor " + entry.name,
                 "tensors packed one after another");
        next = entry.end;
        previous = "tensor " + entry.name;
    }
    if (next != data_bytes)
        reject(path, std::to_string(data_bytes - next) + " bytes after the last tensor",
             "the data section to end with it (" + std::to_string(next) + " bytes)");
}

// Parses the header, refusing duplicate tensor names, and headers shaped like no real one:
// nested deeper or made of more values than any has. Parsed into memory, 100 MB of tiny
// JSON values ('[[[[...' or '[1,1,1,...') would otherwise cost gigabytes.
nlohmann::ordered_json parse_header(const std::string& path, const std::string& text) {
    std::vector<std::string> top_level_keys;
    int64_t events = 0;
    auto guard = [&](int depth, nlohmann::ordered_json::parse_event_t event, nlohmann::ordered_json& value) {
        using event_t = nlohmann::ordered_json::parse_event_t;
        if (++events > max_header_events)
            reject(path, "header has more than " + std::to_string(max_header_events) + " JSON values",
                 "a few per tensor");
        if ((event == event_t::object_start || event == event_t::array_start) && depth >= max_header_depth)
            reject(path, "header nests deeper than " + std::to_string(max_header_depth) + " levels",
                 "a flat safetensors header");
        if (event == event_t::key && depth == 1) top_level_keys.push_back(value.get<std::string>());
        return true;
    };
    check_utf8(text, path + ": header");  // names the byte, which the JSON parser would not
    nlohmann::ordered_json header;
    try {
        header = nlohmann::ordered_json::parse(text, guard);
    } catch (const nlohmann::json::parse_error& e) {
        reject(path, "header is not valid JSON (at byte " + std::to_string(e.byte) + ")", "a UTF-8 JSON object");
    } catch (const nlohmann::json::out_of_range&) {  // 1e999: found by fuzz/fuzz_checkpoint.cpp
        reject(path, "header holds a number too large for a double", "a safetensors header");
    }
    if (!header.is_object()) reject(path, "header is " + kind_of(header), "a JSON object");
    std::sort(top_level_keys.begin(), top_level_keys.end());
    auto duplicate = std::adjacent_find(top_level_keys.begin(), top_level_keys.end());
    if (duplicate != top_level_keys.end()) reject(path, "header names \"" + *duplicate + "\" twice", "unique names");
    return header;
}

}  // namespace

std::string safetensors_header(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
    nlohmann::ordered_json header;
    header["__metadata__"] = nlohmann::ordered_json::object();
    for (const auto& [key, value] : metadata) header["__metadata__"][key] = value;
    uint64_t offset = 0;
    for (const auto& [name, tensor] : tensors) {
        if (tensor.dtype() != DType::f32)
            throw std::invalid_argument("safetensors: tensor " + name + " is " + dtype_name(tensor.dtype()) +
                                        ", expected f32");
        if (name == "__metadata__" || header.contains(name))
            throw std::invalid_argument("safetensors: tensor name " + name + " used twice");
        const uint64_t bytes = static_cast<uint64_t>(tensor.numel()) * 4;
        header[name] = {{"dtype", "F32"}, {"shape", tensor.shape()}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string header_text = header.dump();  // compact; non-ASCII stays raw UTF-8
    header_text.append((8 - header_text.size() % 8) % 8, ' ');  // 8 + N is then a multiple of 8 too

    std::string out;
    append_u64_le(out, header_text.size());
    return out + header_text;
}

// The tensors' data, each a view of the tensor's own (contiguous, f32) storage.
static std::vector<std::string_view> tensor_bytes(const NamedTensors& tensors) {
    std::vector<std::string_view> pieces;
    for (const auto& [name, tensor] : tensors)
        pieces.emplace_back(reinterpret_cast<const char*>(tensor.data<float>()), static_cast<size_t>(tensor.numel()) * 4);
    return pieces;
}

std::string safetensors_bytes(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata) {
    std::string out = safetensors_header(tensors, metadata);
    for (std::string_view data : tensor_bytes(tensors)) out += data;
    return out;
}

StagedFile stage_safetensors(const std::string& path, const NamedTensors& tensors,
                             const std::map<std::string, std::string>& metadata) {
    const std::string header = safetensors_header(tensors, metadata);
    std::vector<std::string_view> pieces = {header};
    for (std::string_view data : tensor_bytes(tensors)) pieces.push_back(data);
    return StagedFile(path, pieces);
}

void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
    stage_safetensors(path, tensors, metadata).commit();
}

SafetensorsFile read_safetensors(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code error;
    const fs::file_status status = fs::status(path, error);
    if (status.type() == fs::file_type::not_found) reject(path, "no such file", "a safetensors file");
    if (error) reject(path, "cannot examine it (" + error.message() + ")", "a readable safetensors file");
    if (fs::is_directory(status)) reject(path, "is a directory", "a safetensors file");
    if (!fs::is_regular_file(status)) reject(path, "is not a regular file", "a safetensors file");
    const uint64_t file_bytes = fs::file_size(path, error);
    if (error) reject(path, "cannot read its size (" + error.message() + ")", "a readable safetensors file");

    std::ifstream in(path, std::ios::binary);
    if (!in) reject(path, "cannot open it (" + std::string(std::strerror(errno)) + ")", "a readable safetensors file");
    auto read_exactly = [&](char* into, uint64_t bytes) {
        if (!in.read(into, static_cast<std::streamsize>(bytes)))
            reject(path, "file ended early (it changed while being read?)", std::to_string(file_bytes) + " bytes");
    };

    if (file_bytes < 8)
        reject(path, "file is " + std::to_string(file_bytes) + " bytes", "at least 8 (the header length)");
    unsigned char length_bytes[8];
    read_exactly(reinterpret_cast<char*>(length_bytes), 8);
    const uint64_t header_bytes = read_u64_le(length_bytes);
    if (header_bytes > file_bytes - 8)
        reject(path, "header length " + std::to_string(header_bytes) + " runs past the end of the file",
             "at most " + std::to_string(file_bytes - 8) + " (the file is " + std::to_string(file_bytes) + " bytes)");
    if (header_bytes > max_header_bytes)
        reject(path, "header length " + std::to_string(header_bytes) + " bytes",
             "at most " + std::to_string(max_header_bytes));
    std::string header_text(header_bytes, '\0');
    read_exactly(header_text.data(), header_bytes);
    const nlohmann::ordered_json header = parse_header(path, header_text);

    const uint64_t data_bytes = file_bytes - 8 - header_bytes;
    SafetensorsFile file;
    std::vector<TensorEntry> entries;
    for (const auto& [name, info] : header.items()) {
        if (name != "__metadata__") {
            entries.push_back(check_entry(path, name, info, data_bytes));
            continue;
        }
        if (!info.is_object()) reject(path, "__metadata__ is " + kind_of(info), "an object of strings");
        for (const auto& [key, value] : info.items()) {
            if (!value.is_string()) reject(path, "__metadata__." + key + " is " + kind_of(value), "a string");
            file.metadata[key] = value.get<std::string>();
        }
    }
    check_tiling(path, entries, data_bytes);

    // Only now, with every size known to fit the file, the data is read.
    for (const TensorEntry& entry : entries) {
        Tensor tensor = Tensor::zeros(entry.shape, DType::f32);
        in.seekg(static_cast<std::streamoff>(8 + header_bytes + entry.begin));
        read_exactly(reinterpret_cast<char*>(tensor.data<float>()), entry.end - entry.begin);
        file.tensors.emplace_back(entry.name, tensor);
    }
    return file;
}

}  // namespace tinyformer
