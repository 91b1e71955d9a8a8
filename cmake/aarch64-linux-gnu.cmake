# Cross-compiling for 64-bit Arm Linux with Debian's cross compiler (g++-aarch64-linux-gnu,
# from crossbuild-essential-arm64) against Debian's arm64 libraries installed beside the
# build machine's with multiarch (dpkg --add-architecture arm64; apt-get install
# libdnnl-dev:arm64 ...). scripts/cross-arm64.sh uses it inside a Debian root:
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DTINYFORMER_NATIVE=OFF
# The binaries run under qemu-user (qemu-aarch64), which ctest and try_run use through
# CMAKE_CROSSCOMPILING_EMULATOR; the arm64 loader and libraries are found in their multiarch
# places (/lib/ld-linux-aarch64.so.1, /usr/lib/aarch64-linux-gnu), so no -L is needed.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(triple aarch64-linux-gnu)

set(CMAKE_C_COMPILER ${triple}-gcc)
set(CMAKE_CXX_COMPILER ${triple}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${triple})

# Libraries, headers and CMake packages: the cross toolchain's own, then the machine's with
# multiarch (lib/aarch64-linux-gnu through CMAKE_LIBRARY_ARCHITECTURE; architecture-
# independent headers and configs such as Eigen's and CLI11's in /usr). Programs (git,
# help2man, pkg-config) are the build machine's.
set(CMAKE_FIND_ROOT_PATH /usr/${triple} /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config (cpp-httplib): the arm64 .pc files only, never the build machine's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${triple}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

find_program(TINYFORMER_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(TINYFORMER_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${TINYFORMER_QEMU_AARCH64})
endif()
