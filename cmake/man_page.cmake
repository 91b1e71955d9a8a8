cmake_minimum_required(VERSION 3.25)
# The man page, made at build time from the binary's own --help texts, so that it cannot
# drift from them: help2man turns `tinyformer --help` into NAME, SYNOPSIS, DESCRIPTION and
# OPTIONS, and this script adds a SUBCOMMANDS section holding every `tinyformer SUB --help`
# verbatim, after the examples in cmake/tinyformer.h2m (whose @DATADIR@ is where the
# examples are installed, e.g. /usr/share).
#   cmake -DTINYFORMER=build/tinyformer -DHELP2MAN=/usr/bin/help2man -DVERSION=0.1.0 -DDATADIR=/usr/share
#         -DEXTRA=cmake/tinyformer.h2m -DOUTPUT=build/share/man/man1/tinyformer.1 -P man_page.cmake
function(run_help output_variable)
  execute_process(COMMAND "${TINYFORMER}" ${ARGN} --help OUTPUT_VARIABLE text RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "man_page.cmake: `tinyformer ${ARGN} --help` failed (${failed})")
  endif()
  set(${output_variable} "${text}" PARENT_SCOPE)
endfunction()

# roff: a backslash is written \e, and a line starting with . or ' would be a request.
function(roff_escape output_variable text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${output_variable} "${text}" PARENT_SCOPE)
endfunction()

run_help(program_help)
string(REGEX REPLACE ".*\nSubcommands:\n" "" subcommand_lines "${program_help}")
string(REGEX MATCHALL "(^|\n)  [a-z][a-z-]*" subcommands "${subcommand_lines}")
if(NOT subcommands)
  message(FATAL_ERROR "man_page.cmake: no subcommands found in `tinyformer --help`")
endif()

file(READ "${EXTRA}" include_text)
string(REPLACE "@DATADIR@" "${DATADIR}" include_text "${include_text}")
string(APPEND include_text "\n[SUBCOMMANDS]\n"
       "Each subcommand's options, as `tinyformer SUBCOMMAND --help` prints them.\n")
foreach(subcommand IN LISTS subcommands)
  string(STRIP "${subcommand}" subcommand)
  run_help(help ${subcommand})
  roff_escape(help "${help}")
  string(APPEND include_text ".SS ${subcommand}\n.nf\n${help}.fi\n")
endforeach()
file(WRITE "${OUTPUT}.h2m" "${include_text}")  # kept beside the page, for reading

execute_process(
  COMMAND "${HELP2MAN}" --no-info --section=1 --locale=C.UTF-8 --version-string=${VERSION}
          "--name=train, sample, evaluate and inspect tiny character-level transformers"
          "--include=${OUTPUT}.h2m" "--output=${OUTPUT}.tmp" "${TINYFORMER}"
  RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "man_page.cmake: help2man failed (${failed})")
endif()
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
