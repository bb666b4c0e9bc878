# scripts/layers.cmake: ladder's build layers, and the checks that keep them
# acyclic.
#
# A layer is a static library that owns one or more source folders. It may
# depend only on layers declared before it: ladder_layer() refuses any other
# dependency with a FATAL_ERROR naming both, so a cycle cannot be written.
# ladder_check_layer_includes() reads every file a layer owns and fails when
# one includes ("folder/file.h") a folder owned by a layer that its own layer
# does not depend on, directly or through the layers below.
#
# It fails too on an include cycle inside one layer. The unit is a module: a
# header and the .cpp/.cu of the same stem in the same folder (variants/step/step.h
# and variants/step/step.cpp are module variants/step/step). A module depends on each
# other module of its layer that one of its files includes, and these
# dependencies must not form a cycle; the message names each include of the
# cycle with file:line. A file including its own module's header is no cycle.
# A class's members defined in another module's .cpp (Switches declared in
# switches/flags.h, its methods in switches/registry.cpp) make the two one
# module: what the .cpp includes, the header's users depend on, and a cycle
# through it is named with the line that defines a member.
#
# CMakeLists.txt includes this file and calls ladder_check_layers() once every
# layer is declared: the include check runs at configure time, and again at
# build time whenever a layer's file changes (the same code, run as a script
# with `cmake -P`, where ladder_layer() only records the layer). The fixture
# test tests/checks/check_layers.cmake runs it on tiny trees: a clean one, one with
# an upward include and one with a cycle inside a layer.

# ladder_layer(NAME <target> DIRS <folder>... [ROOMS] [EXCLUDE <glob>...]
#              [CLAIMS <glob>...] [DEPENDS <layer>...] [SOURCES <file>...])
# Folders, excluded files (an executable's main.cpp, which may include any
# layer; variants/ops/*/test_*.cpp, an op's tests, which the test binary
# compiles) and claimed files are relative to the source root; EXCLUDE and
# CLAIMS take globs, expanded at every check. A sub-folder declared by a later
# layer (bench/micro inside bench) belongs to that layer, and so does a file it
# CLAIMS inside another layer's folder (an op's micro-benchmark,
# variants/ops/*/*_micro.cpp, is ladder_micro's: its includes are checked
# against ladder_micro's layers). ROOMS: the layer's
# folders are rooms, each one idea (variants/: config/, ops/<op>/, planners/,
# step/, ...), and no folder of it may include, directly or through others,
# one that includes it back. ROOM_OF <suffix> <folder>: a file whose name
# (without extension) ends with <suffix> stands in <folder>'s room wherever
# it sits (an op's switch, variants/ops/<op>/<name>_switch.cpp, is a switch: it includes
# switches/switch.h, which knows every op's options, and no op includes it).
function(ladder_layer)
  cmake_parse_arguments(L "ROOMS" "NAME" "DIRS;EXCLUDE;CLAIMS;ROOM_OF;DEPENDS;SOURCES" ${ARGN})
  get_property(layers GLOBAL PROPERTY LADDER_LAYERS)
  if(L_NAME IN_LIST layers)
    message(FATAL_ERROR "ladder_layer(${L_NAME}): declared twice")
  endif()
  set(closure "")
  foreach(dep IN LISTS L_DEPENDS)
    if(NOT dep IN_LIST layers)
      string(REPLACE ";" ", " below "${layers}")
      if(below STREQUAL "")
        set(below "none")
      endif()
      message(FATAL_ERROR
        "ladder_layer(${L_NAME}): depends on ${dep}, which is not a layer declared before it "
        "(declared so far, bottom to top: ${below}). A layer may only depend on the layers below "
        "it, so that no cycle can be written: move what ${L_NAME} needs from ${dep} down into a "
        "lower layer.")
    endif()
    get_property(dep_closure GLOBAL PROPERTY LADDER_LAYER_${dep}_CLOSURE)
    list(APPEND closure ${dep} ${dep_closure})
  endforeach()
  list(REMOVE_DUPLICATES closure)
  set_property(GLOBAL APPEND PROPERTY LADDER_LAYERS ${L_NAME})
  set_property(GLOBAL PROPERTY LADDER_LAYER_${L_NAME}_DIRS ${L_DIRS})
  set_property(GLOBAL PROPERTY LADDER_LAYER_${L_NAME}_EXCLUDE ${L_EXCLUDE})
  set_property(GLOBAL PROPERTY LADDER_LAYER_${L_NAME}_CLAIMS ${L_CLAIMS})
  set_property(GLOBAL PROPERTY LADDER_LAYER_${L_NAME}_ROOM_OF ${L_ROOM_OF})
  set_property(GLOBAL PROPERTY LADDER_LAYER_${L_NAME}_CLOSURE ${closure})
  set_property(GLOBAL PROPERTY LADDER_LAYER_${L_NAME}_ROOMS ${L_ROOMS})
  # The same declaration, for the script the build re-runs (ladder_check_layers).
  set(rooms "")
  if(L_ROOMS)
    set(rooms " ROOMS ROOM_OF ${L_ROOM_OF}")
  endif()
  set_property(GLOBAL APPEND_STRING PROPERTY LADDER_LAYER_DECLARATIONS
               "ladder_layer(NAME ${L_NAME} DIRS ${L_DIRS} EXCLUDE ${L_EXCLUDE} CLAIMS ${L_CLAIMS} "
               "DEPENDS ${L_DEPENDS}${rooms})\n")
  if(NOT CMAKE_SCRIPT_MODE_FILE)
    add_library(${L_NAME} STATIC ${L_SOURCES})
    if(L_DEPENDS)
      target_link_libraries(${L_NAME} PUBLIC ${L_DEPENDS})
    endif()
  endif()
endfunction()

# `globs` (relative to `root`) expanded, as paths relative to it.
function(_ladder_expand_globs root globs out)
  set(files "")
  foreach(g IN LISTS globs)
    file(GLOB matched RELATIVE "${root}" "${root}/${g}")
    list(APPEND files ${matched})
  endforeach()
  list(SORT files)
  set(${out} ${files} PARENT_SCOPE)
endfunction()

# The layer owning `path` (relative to the root): the one that claims it, else
# the one whose folder is the longest prefix of it; "" when no layer owns it
# (a system or generated header). Claims are expanded by
# ladder_check_layer_includes (LADDER_LAYER_<layer>_CLAIMED).
function(_ladder_layer_of path out)
  get_property(layers GLOBAL PROPERTY LADDER_LAYERS)
  foreach(layer IN LISTS layers)
    get_property(claimed GLOBAL PROPERTY LADDER_LAYER_${layer}_CLAIMED)
    if(path IN_LIST claimed)
      set(${out} ${layer} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(best "")
  set(best_len 0)
  foreach(layer IN LISTS layers)
    get_property(dirs GLOBAL PROPERTY LADDER_LAYER_${layer}_DIRS)
    foreach(dir IN LISTS dirs)
      string(LENGTH "${dir}/" n)
      string(SUBSTRING "${path}" 0 ${n} head)
      if(head STREQUAL "${dir}/" AND n GREATER best_len)
        set(best ${layer})
        set(best_len ${n})
      endif()
    endforeach()
  endforeach()
  set(${out} "${best}" PARENT_SCOPE)
endfunction()

# `text` as a list with one element per line: characters a CMake list treats
# specially become harmless ones first (";" a ","), so that element N is line N.
function(_ladder_lines text out)
  string(REPLACE "\\" "/" text "${text}")
  string(REPLACE "[" "(" text "${text}")
  string(REPLACE "]" ")" text "${text}")
  string(REPLACE ";" "," text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

# The line numbers of `#include "<inc>"` in `text`.
function(_ladder_include_lines text inc out)
  _ladder_lines("${text}" lines)
  set(n 0)
  set(found "")
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"" AND CMAKE_MATCH_1 STREQUAL inc)
      list(APPEND found ${n})
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# The first line of `text` that defines a member of `class` ("Class::" after
# a return type, or at the line's start).
function(_ladder_definition_line text class out)
  _ladder_lines("${text}" lines)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(line MATCHES "^([A-Za-z_][^,{}()=]*[ \t*&])?${class}::")
      set(${out} ${n} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "?" PARENT_SCOPE)
endfunction()

# Reads `file` (of `layer`, relative to `root`) and, in the caller's scope:
# appends every include of a folder outside `allowed` (the layer and the
# layers below it) to `violations`, adds the file's module to `modules`, and
# records each include of another module of the same layer as an edge: the
# module in _ladder_out_<module>, the "file|include" forming it in
# _ladder_edge_<module>+<included module>. A module is a path without its
# extension, so variants/step/step.h and variants/step/step.cpp are module variants/step.
function(_ladder_scan_file root file layer allowed allowed_dirs)
  file(READ "${root}/${file}" text)
  # Directives at the start of a line only (not in a // comment), as
  # _ladder_include_lines finds them: an edge always has a line to name.
  string(REGEX MATCHALL "\n[ \t]*#[ \t]*include[ \t]*\"[^\"]+\"" includes "\n${text}")
  string(REGEX REPLACE "\\.[^./]*$" "" module "${file}")
  # Classes: a header's definitions as _ladder_class_<layer>_<Class> (its
  # module); a .cpp/.cu file's out-of-line member definitions ("Class::f("
  # at a line's start, after a return type or not) as the classes in
  # _ladder_defines_<module>, the file in _ladder_defines_file_<module>+<Class>.
  if(file MATCHES "\\.(h|hpp|cuh)$")
    string(REGEX MATCHALL "\n[ \t]*(class|struct)[ \t]+[A-Z][A-Za-z0-9_]*[^;\n]*{" decls "\n${text}")
    foreach(decl IN LISTS decls)
      string(REGEX REPLACE "^\n[ \t]*(class|struct)[ \t]+([A-Z][A-Za-z0-9_]*).*$" "\\2" class "${decl}")
      set(_ladder_class_${layer}_${class} "${module}" PARENT_SCOPE)
      set(_ladder_class_file_${layer}_${class} "${file}" PARENT_SCOPE)
    endforeach()
  else()
    string(REGEX MATCHALL "\n([A-Za-z_][^\n;{}()=]*[ \t*&])?[A-Z][A-Za-z0-9_]*::~?[A-Za-z_][A-Za-z0-9_]*\\("
           defs "\n${text}")
    foreach(def IN LISTS defs)
      string(REGEX REPLACE "^.*[\n \t*&]([A-Z][A-Za-z0-9_]*)::~?[A-Za-z_][A-Za-z0-9_]*\\($" "\\1" class "${def}")
      if(NOT class IN_LIST _ladder_defines_${module})
        list(APPEND _ladder_defines_${module} ${class})
        set(_ladder_defines_${module} ${_ladder_defines_${module}} PARENT_SCOPE)
        set(_ladder_defines_file_${module}+${class} "${file}" PARENT_SCOPE)
      endif()
    endforeach()
  endif()
  if(NOT module IN_LIST modules)
    list(APPEND modules ${module})
    set(modules ${modules} PARENT_SCOPE)
  endif()
  set(seen "")
  foreach(directive IN LISTS includes)
    string(REGEX REPLACE "^\n[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\"$" "\\1" inc "${directive}")
    _ladder_layer_of("${inc}" target)
    string(REGEX REPLACE "\\.[^./]*$" "" to "${inc}")
    if(target STREQUAL layer AND NOT to STREQUAL module)
      set(edge _ladder_edge_${module}+${to})
      if(NOT to IN_LIST _ladder_out_${module})
        list(APPEND _ladder_out_${module} ${to})
        set(_ladder_out_${module} ${_ladder_out_${module}} PARENT_SCOPE)
      endif()
      if(NOT "${file}|${inc}" IN_LIST ${edge})
        list(APPEND ${edge} "${file}|${inc}")
        set(${edge} ${${edge}} PARENT_SCOPE)
      endif()
    endif()
    if(target STREQUAL "" OR target IN_LIST allowed OR inc IN_LIST seen)
      continue()
    endif()
    list(APPEND seen "${inc}")
    _ladder_include_lines("${text}" "${inc}" line_numbers)
    foreach(n IN LISTS line_numbers)
      string(APPEND violations "\n  ${file}:${n}: includes \"${inc}\" (layer ${target}), "
             "but layer ${layer} may only include:${allowed_dirs}")
    endforeach()
  endforeach()
  set(violations "${violations}" PARENT_SCOPE)
endfunction()

# After a layer's files are scanned: a module whose .cpp defines members of a
# class declared in another module's header joins that module (both become
# the header's), so that their includes are one module's. `modules`,
# _ladder_out_<module> and _ladder_edge_<from>+<to> are rewritten for the
# merged modules; _ladder_joined_<module> keeps "file|Class|header" for each
# join, which a cycle through the module names.
macro(_ladder_join_implementations layer)
  foreach(_m IN LISTS modules)
    set(_rep_${_m} ${_m})
  endforeach()
  foreach(_m IN LISTS modules)
    foreach(_class IN LISTS _ladder_defines_${_m})
      set(_owner "${_ladder_class_${layer}_${_class}}")
      if(_owner STREQUAL "" OR NOT DEFINED _rep_${_owner})
        continue()
      endif()
      set(_into ${_rep_${_owner}})
      set(_from ${_rep_${_m}})
      if(NOT _into STREQUAL _from)
        foreach(_k IN LISTS modules)  # every module of _from's group joins _into's
          if(_rep_${_k} STREQUAL _from)
            set(_rep_${_k} ${_into})
          endif()
        endforeach()
        list(APPEND _ladder_joined_${_into} ${_ladder_joined_${_from}})
      endif()
      if(NOT _owner STREQUAL _m)
        list(APPEND _ladder_joined_${_into}
             "${_ladder_defines_file_${_m}+${_class}}|${_class}|${_ladder_class_file_${layer}_${_class}}")
      endif()
    endforeach()
  endforeach()
  # The merged graph: an edge between two groups for each include between their modules.
  set(_merged "")
  foreach(_m IN LISTS modules)
    list(APPEND _merged ${_rep_${_m}})
    set(_out_${_m} ${_ladder_out_${_m}})
  endforeach()
  list(REMOVE_DUPLICATES _merged)
  foreach(_m IN LISTS _merged)
    set(_new_out_${_m} "")
  endforeach()
  foreach(_m IN LISTS modules)
    foreach(_to IN LISTS _out_${_m})
      if(NOT DEFINED _rep_${_to})
        continue()
      endif()
      set(_a ${_rep_${_m}})
      set(_b ${_rep_${_to}})
      if(_a STREQUAL _b)
        continue()
      endif()
      if(NOT _b IN_LIST _new_out_${_a})
        list(APPEND _new_out_${_a} ${_b})
      endif()
      list(APPEND _new_edge_${_a}+${_b} ${_ladder_edge_${_m}+${_to}})
    endforeach()
  endforeach()
  foreach(_m IN LISTS _merged)
    set(_ladder_out_${_m} ${_new_out_${_m}})
    foreach(_to IN LISTS _new_out_${_m})
      set(_ladder_edge_${_m}+${_to} ${_new_edge_${_m}+${_to}})
    endforeach()
  endforeach()
  set(modules ${_merged})
endmacro()

# The room of module `m` of `layer`: its folder, or the folder its layer's
# ROOM_OF names for its file name's suffix.
function(_ladder_room_of layer m out)
  get_property(room_of GLOBAL PROPERTY LADDER_LAYER_${layer}_ROOM_OF)
  get_filename_component(room "${m}" DIRECTORY)
  get_filename_component(name "${m}" NAME)
  if(room_of)
    list(GET room_of 0 suffix)
    list(GET room_of 1 folder)
    if(name MATCHES "${suffix}$")
      set(room "${folder}")
    endif()
  endif()
  set(${out} "${room}" PARENT_SCOPE)
endfunction()

# The layer's folders as nodes "dir+<folder>" (after its modules are joined):
# an edge from one folder to another for each include between their modules,
# each recorded as the modules' are (_ladder_out_, _ladder_edge_), so that
# _ladder_find_cycles and _ladder_describe_cycle read them alike. A folder is
# a room: none may include, directly or through others, one that includes it
# back, so that what a folder holds can be read from the folders below it.
macro(_ladder_folder_graph)
  set(folders "")
  foreach(_m IN LISTS modules)
    _ladder_room_of(${layer} "${_m}" _a)
    foreach(_to IN LISTS _ladder_out_${_m})
      _ladder_room_of(${layer} "${_to}" _b)
      if(_a STREQUAL _b)
        continue()
      endif()
      list(APPEND folders dir+${_a} dir+${_b})
      if(NOT dir+${_b} IN_LIST _ladder_out_dir+${_a})
        list(APPEND _ladder_out_dir+${_a} dir+${_b})
      endif()
      list(APPEND _ladder_edge_dir+${_a}+dir+${_b} ${_ladder_edge_${_m}+${_to}})
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES folders)
endmacro()

# The include cycles among `modules` (one layer's, their edges recorded by
# _ladder_scan_file), each as "m1>m2>...>mk" where mk includes m1 back. A
# depth-first search: one cycle per include that closes one (a back edge),
# the modules on the search path from the included module to the including
# one. Every cycle holds a back edge, so a layer with a cycle always reports
# one; a cycle that shares its back edge with the reported one shows once
# that one is broken elsewhere.
function(_ladder_find_cycles modules out)
  set(cycles "")
  foreach(root IN LISTS modules)
    if(DEFINED _state_${root})
      continue()
    endif()
    set(path ${root})      # the modules being searched, root first
    set(_state_${root} open)
    set(_next_${root} 0)   # index in _ladder_out_<module> of the edge to follow next
    while(NOT path STREQUAL "")
      list(GET path -1 m)
      list(LENGTH _ladder_out_${m} n_out)
      if(${_next_${m}} EQUAL n_out)
        set(_state_${m} done)
        list(POP_BACK path)
        continue()
      endif()
      list(GET _ladder_out_${m} ${_next_${m}} to)
      math(EXPR _next_${m} "${_next_${m}} + 1")
      if(NOT DEFINED _state_${to})
        list(APPEND path ${to})
        set(_state_${to} open)
        set(_next_${to} 0)
      elseif("${_state_${to}}" STREQUAL "open")
        list(FIND path ${to} first)
        list(SUBLIST path ${first} -1 cycle)
        string(JOIN ">" cycle ${cycle})
        list(APPEND cycles "${cycle}")
      endif()
    endwhile()
  endforeach()
  set(${out} ${cycles} PARENT_SCOPE)
endfunction()

# The lines naming `cycle` ("m1>m2>...>mk", from _ladder_find_cycles): every
# include that forms it, as "  file:line includes \"header\"", in cycle order.
function(_ladder_describe_cycle root cycle out)
  string(REPLACE ">" ";" modules "${cycle}")
  list(GET modules 0 first)
  list(APPEND modules ${first})
  list(LENGTH modules n)
  math(EXPR last "${n} - 2")
  set(lines "")
  foreach(i RANGE ${last})
    math(EXPR j "${i} + 1")
    list(GET modules ${i} from)
    list(GET modules ${j} to)
    # A module joined by an implementation (_ladder_join_implementations): which .cpp defines whose members.
    foreach(join IN LISTS _ladder_joined_${from})
      string(REGEX MATCH "^([^|]*)\\|([^|]*)\\|(.*)$" join "${join}")
      set(file "${CMAKE_MATCH_1}")
      set(class "${CMAKE_MATCH_2}")
      set(owner "${CMAKE_MATCH_3}")
      file(READ "${root}/${file}" text)
      _ladder_definition_line("${text}" "${class}" line)
      string(APPEND lines "\n  ${file}:${line} defines a member of ${class}, which \"${owner}\" declares: one module")
    endforeach()
    foreach(edge IN LISTS _ladder_edge_${from}+${to})
      string(REGEX MATCH "^([^|]*)\\|(.*)$" edge "${edge}")
      set(file "${CMAKE_MATCH_1}")
      set(inc "${CMAKE_MATCH_2}")
      file(READ "${root}/${file}" text)
      _ladder_include_lines("${text}" "${inc}" line_numbers)
      foreach(line IN LISTS line_numbers)
        string(APPEND lines "\n  ${file}:${line} includes \"${inc}\"")
      endforeach()
    endforeach()
  endforeach()
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

# Fails (FATAL_ERROR, every offending file:line) when a file of a layer
# includes a folder of a layer it does not depend on, or when modules of one
# layer include each other in a cycle. Records the files read in the global
# property LADDER_LAYER_FILES.
function(ladder_check_layer_includes root)
  get_property(layers GLOBAL PROPERTY LADDER_LAYERS)
  set(violations "")
  set(cycles "")
  set(read "")
  foreach(layer IN LISTS layers)
    get_property(claims GLOBAL PROPERTY LADDER_LAYER_${layer}_CLAIMS)
    _ladder_expand_globs("${root}" "${claims}" claimed)
    set_property(GLOBAL PROPERTY LADDER_LAYER_${layer}_CLAIMED ${claimed})
  endforeach()
  foreach(layer IN LISTS layers)
    get_property(dirs GLOBAL PROPERTY LADDER_LAYER_${layer}_DIRS)
    get_property(exclude_globs GLOBAL PROPERTY LADDER_LAYER_${layer}_EXCLUDE)
    _ladder_expand_globs("${root}" "${exclude_globs}" exclude)
    get_property(claimed GLOBAL PROPERTY LADDER_LAYER_${layer}_CLAIMED)
    get_property(closure GLOBAL PROPERTY LADDER_LAYER_${layer}_CLOSURE)
    set(allowed ${layer} ${closure})
    set(allowed_dirs "")
    foreach(l IN LISTS allowed)
      get_property(l_dirs GLOBAL PROPERTY LADDER_LAYER_${l}_DIRS)
      foreach(d IN LISTS l_dirs)
        string(APPEND allowed_dirs " ${d}/")
      endforeach()
    endforeach()
    set(modules "")
    set(patterns "")
    foreach(dir IN LISTS dirs)
      foreach(ext h hpp cuh c cpp cu)
        list(APPEND patterns "${root}/${dir}/*.${ext}")
      endforeach()
    endforeach()
    file(GLOB_RECURSE files RELATIVE "${root}" ${patterns})
    list(APPEND files ${claimed})
    list(REMOVE_DUPLICATES files)
    list(SORT files)
    foreach(file IN LISTS files)
      _ladder_layer_of("${file}" owner)
      if(file IN_LIST exclude OR NOT owner STREQUAL layer)
        continue()
      endif()
      list(APPEND read "${root}/${file}")
      _ladder_scan_file("${root}" "${file}" ${layer} "${allowed}" "${allowed_dirs}")
    endforeach()
    _ladder_join_implementations(${layer})
    _ladder_find_cycles("${modules}" found)
    foreach(cycle IN LISTS found)
      _ladder_describe_cycle("${root}" "${cycle}" lines)
      string(APPEND cycles "\ninclude cycle inside layer ${layer}:${lines}")
    endforeach()
    get_property(rooms GLOBAL PROPERTY LADDER_LAYER_${layer}_ROOMS)
    set(folders "")
    if(rooms)
      _ladder_folder_graph()
    endif()
    _ladder_find_cycles("${folders}" found)
    foreach(cycle IN LISTS found)
      _ladder_describe_cycle("${root}" "${cycle}" lines)
      string(REPLACE "dir+" "" cycle "${cycle}")
      string(REPLACE ">" " > " cycle "${cycle}")
      string(APPEND cycles "\nfolder cycle inside layer ${layer}:\n  folders ${cycle} > back${lines}")
    endforeach()
  endforeach()
  set_property(GLOBAL PROPERTY LADDER_LAYER_FILES ${read})
  _ladder_report_includes("${violations}" "${cycles}")
endfunction()

# FATAL_ERROR with the upward includes and the cycles found, if any, each
# with what to do about it. `cycles` holds one "include cycle inside layer
# ...:" block per cycle, each starting with a newline.
function(_ladder_report_includes violations cycles)
  set(message "")
  if(NOT violations STREQUAL "")
    string(APPEND message "\nan include points up the layers:${violations}\n"
           "Move the code to the lowest layer that needs it, or include it from a higher layer.")
  endif()
  if(NOT cycles STREQUAL "")
    string(APPEND message "${cycles}\n"
           "A module (a header and the .cpp/.cu of its stem in the same folder) may not include, "
           "directly or through others, a module that includes it back; nor may a folder of a layer "
           "include a folder that includes it back. Break each cycle by moving the declaration both "
           "sides need into a header of its own (in a folder) that includes neither, and include that "
           "header from both.")
  endif()
  if(NOT message STREQUAL "")
    string(SUBSTRING "${message}" 1 -1 message)  # the first block follows the prefix
    message(FATAL_ERROR "layers (scripts/layers.cmake): ${message}")
  endif()
endfunction()

# After every layer is declared (CMakeLists.txt): the include checks now, the
# same checks at build time before any layer compiles (re-run whenever a file
# it read changes), and a check that no layer links a layer it may not depend
# on (target_link_libraries outside ladder_layer).
function(ladder_check_layers)
  get_property(layers GLOBAL PROPERTY LADDER_LAYERS)
  foreach(layer IN LISTS layers)
    get_property(closure GLOBAL PROPERTY LADDER_LAYER_${layer}_CLOSURE)
    get_target_property(links ${layer} LINK_LIBRARIES)
    foreach(lib IN LISTS links)
      if(lib IN_LIST layers AND NOT lib IN_LIST closure)
        message(FATAL_ERROR "layers (scripts/layers.cmake): ${layer} links ${lib}, a layer it does not "
                "depend on (declare the dependency in ladder_layer(NAME ${layer} ... DEPENDS), where "
                "only the layers below ${layer} are allowed)")
      endif()
    endforeach()
  endforeach()

  ladder_check_layer_includes("${CMAKE_SOURCE_DIR}")

  get_property(declarations GLOBAL PROPERTY LADDER_LAYER_DECLARATIONS)
  get_property(files GLOBAL PROPERTY LADDER_LAYER_FILES)
  set(dir "${CMAKE_BINARY_DIR}/layers")
  set(stamp "${dir}/includes_checked.stamp")
  file(CONFIGURE OUTPUT "${dir}/check_layers.cmake" @ONLY CONTENT
       "# Generated by scripts/layers.cmake (ladder_check_layers): the layers' include check.\n\
cmake_minimum_required(VERSION 3.25)\n\
include(\"${CMAKE_CURRENT_FUNCTION_LIST_FILE}\")\n${declarations}\
ladder_check_layer_includes(\"${CMAKE_SOURCE_DIR}\")\nfile(TOUCH \"${stamp}\")\n")
  add_custom_command(OUTPUT "${stamp}"
    COMMAND ${CMAKE_COMMAND} -P "${dir}/check_layers.cmake"
    DEPENDS ${files} "${dir}/check_layers.cmake" "${CMAKE_CURRENT_FUNCTION_LIST_FILE}"
    COMMENT "Checking that no include points up the layers or forms a cycle inside one (scripts/layers.cmake)"
    VERBATIM)
  add_custom_target(ladder_layer_check DEPENDS "${stamp}")
  foreach(layer IN LISTS layers)
    add_dependencies(${layer} ladder_layer_check)
  endforeach()
endfunction()
