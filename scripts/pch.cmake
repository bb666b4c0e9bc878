# scripts/pch.cmake: which translation units get the precompiled LibTorch
# header (profiler/common/torch_pch.h), and which do without it.
#
# The header is about 700 MB once precompiled, and loading it costs about 4 s
# a translation unit on the 2-core VM (reports/stats/stats.cpp: 5.8 s with it,
# 1.9 s without; 2026-11-29), more than most of ladder's files take to
# compile. Parsing LibTorch without it costs about 10 s. So a file gets the
# header only when it reaches LibTorch: when it, or a header of ladder's that
# it includes (directly or through others), includes one of LibTorch's
# (<torch/...>, <ATen/...>, <c10/...>, <caffe2/...>). The others compile
# without it, and so include what they use.
#
# The includes are read at configure time. A file that starts to include
# LibTorch after that still compiles right, only without the header (slower)
# until the next configure; one that stops keeps it until then.

# Whether `file` (absolute) reaches a LibTorch header; ladder's own includes
# ("folder/file.h") are resolved against `root`. Memoised in global
# properties; an include cycle counts as not reaching (the other files of the
# cycle decide).
function(_ladder_reaches_torch root file out)
  get_property(known GLOBAL PROPERTY "_ladder_torch:${file}" SET)
  if(known)
    get_property(value GLOBAL PROPERTY "_ladder_torch:${file}")
    set(${out} ${value} PARENT_SCOPE)
    return()
  endif()
  set_property(GLOBAL PROPERTY "_ladder_torch:${file}" FALSE)
  set(result FALSE)
  if(EXISTS "${file}")
    file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    foreach(line IN LISTS lines)
      if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*<(torch|ATen|c10|caffe2)/")
        set(result TRUE)
        break()
      endif()
      if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"")
        set(included "${root}/${CMAKE_MATCH_1}")
        _ladder_reaches_torch("${root}" "${included}" reaches)
        if(reaches)
          set(result TRUE)
          break()
        endif()
      endif()
    endforeach()
  endif()
  set_property(GLOBAL PROPERTY "_ladder_torch:${file}" ${result})
  set(${out} ${result} PARENT_SCOPE)
endfunction()

# ladder_precompiled_header(<target>): <target> reuses the precompiled header
# of ladder_torch_pch (CMakeLists.txt) in each of its C++ sources that reaches
# LibTorch; the others are marked SKIP_PRECOMPILE_HEADERS.
function(ladder_precompiled_header target)
  if(NOT LADDER_UNITY_BATCH MATCHES "^[1-9][0-9]*$")
    message(FATAL_ERROR "LADDER_UNITY_BATCH is '${LADDER_UNITY_BATCH}'; expected a whole number >= 1 "
                        "(files compiled as one; 1 compiles each alone)")
  endif()
  target_precompile_headers(${target} REUSE_FROM ladder_torch_pch)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  set(n_torch 0)
  set(n_plain 0)
  foreach(source IN LISTS sources)
    if(NOT source MATCHES "\\.(cpp|cc|cxx)$")
      continue()
    endif()
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${source_dir}")
    _ladder_reaches_torch("${CMAKE_SOURCE_DIR}" "${path}" reaches)
    if(reaches)
      math(EXPR group "${n_torch} / ${LADDER_UNITY_BATCH}")
      set_source_files_properties(${path} TARGET_DIRECTORY ${target} PROPERTIES UNITY_GROUP torch${group})
      math(EXPR n_torch "${n_torch} + 1")
    else()
      math(EXPR group "${n_plain} / ${LADDER_UNITY_BATCH}")
      set_source_files_properties(${path} TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON
                                  UNITY_GROUP plain${group})
      math(EXPR n_plain "${n_plain} + 1")
    endif()
  endforeach()
  if(LADDER_UNITY_BATCH GREATER 1)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
    get_target_property(binary_dir ${target} BINARY_DIR)
    math(EXPR last "(${n_plain} + ${LADDER_UNITY_BATCH} - 1) / ${LADDER_UNITY_BATCH}")
    foreach(group RANGE ${last})
      set_source_files_properties("${binary_dir}/CMakeFiles/${target}.dir/Unity/unity_plain${group}_cxx.cxx"
                                  TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endforeach()
  endif()
endfunction()
