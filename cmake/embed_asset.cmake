# Turns a text file into a C++ source holding it as one string:
#   cmake -DINPUT=page.html -DOUTPUT=page_html.cpp -DNAME=page_html -P embed_asset.cmake
# gives `const std::string_view tinyformer::assets::page_html` (a raw string literal).
file(READ "${INPUT}" content)
set(delimiter "tinyformer_asset")
string(FIND "${content}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains )${delimiter}\" and cannot be embedded as a raw string")
endif()
file(WRITE "${OUTPUT}.tmp"
     "// Generated from ${INPUT} by cmake/embed_asset.cmake; edit that file, not this one.\n"
     "#include <string_view>\n"
     "namespace tinyformer::assets {\n"
     "extern const std::string_view ${NAME};\n"
     "const std::string_view ${NAME} = R\"${delimiter}(${content})${delimiter}\";\n"
     "}  // namespace tinyformer::assets\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
