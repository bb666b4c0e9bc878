# tests/checks/check_layers.cmake: the layer checks of scripts/layers.cmake on tiny
# trees (tests/fixtures/layers/), as the build.layers_* tests run them:
#   cmake -DCASE=<case> -P tests/checks/check_layers.cmake
# clean:  lower and upper, the upper including the lower, and an acyclic
#         include chain inside upper (a diamond): passes.
# upward: the same layers, the lower including the upper: fails, naming
#         lower/lower.h:4 and what layer fixture_lower may include.
# cycle:  the same layers, three modules of upper including each other in a
#         cycle (closed by .cpp files), beside one that is fine: fails, naming
#         each include of the cycle with file:line.
# implemented: config.h includes flags.h, whose class registry.cpp
#         defines the members of while including config.h: fails, naming
#         the includes and the line that defines a member.
# later:  a layer that depends on a layer declared after it: fails, naming
#         both (so a cycle cannot be declared).
# rooms:  a ROOMS layer whose folders a and b include each other, through
#         different modules (no module cycle): fails, naming both includes.
# claims: a lower folder holding an executable's main.cpp (EXCLUDEd) and a
#         file the upper layer CLAIMS, both including the upper layer: passes.
# unclaimed: the same tree without EXCLUDE and CLAIMS: fails, naming both.
# room_of: a ROOMS layer whose folder a holds a *_switch.cpp that includes
#         folder b, which includes a: ROOM_OF _switch upper/b stands the file
#         in b's room: passes.
# room_of_unset: the same tree without ROOM_OF: fails, a folder cycle.
cmake_minimum_required(VERSION 3.25)
include("${CMAKE_CURRENT_LIST_DIR}/../../scripts/layers.cmake")
if(CASE STREQUAL "later")
  ladder_layer(NAME fixture_upper DIRS upper DEPENDS fixture_lower)
  ladder_layer(NAME fixture_lower DIRS lower)
elseif(CASE STREQUAL "rooms")
  ladder_layer(NAME fixture_lower DIRS lower)
  ladder_layer(NAME fixture_upper DIRS upper ROOMS DEPENDS fixture_lower)
elseif(CASE STREQUAL "claims")
  ladder_layer(NAME fixture_lower DIRS lower EXCLUDE lower/main.cpp)
  ladder_layer(NAME fixture_upper DIRS upper CLAIMS lower/*_micro.cpp DEPENDS fixture_lower)
elseif(CASE STREQUAL "unclaimed")
  ladder_layer(NAME fixture_lower DIRS lower)
  ladder_layer(NAME fixture_upper DIRS upper DEPENDS fixture_lower)
elseif(CASE STREQUAL "room_of")
  ladder_layer(NAME fixture_lower DIRS lower)
  ladder_layer(NAME fixture_upper DIRS upper ROOMS ROOM_OF _switch upper/b DEPENDS fixture_lower)
elseif(CASE STREQUAL "room_of_unset")
  ladder_layer(NAME fixture_lower DIRS lower)
  ladder_layer(NAME fixture_upper DIRS upper ROOMS DEPENDS fixture_lower)
elseif(CASE MATCHES "^(clean|upward|cycle|implemented)$")
  ladder_layer(NAME fixture_lower DIRS lower)
  ladder_layer(NAME fixture_upper DIRS upper DEPENDS fixture_lower)
else()
  message(FATAL_ERROR
    "check_layers.cmake: CASE is '${CASE}'; expected clean, upward, cycle, implemented, later, rooms, claims, "
    "unclaimed, room_of or room_of_unset")
endif()
string(REGEX REPLACE "^unclaimed$" "claims" tree "${CASE}")
string(REGEX REPLACE "^room_of_unset$" "room_of" tree "${tree}")
ladder_check_layer_includes("${CMAKE_CURRENT_LIST_DIR}/../fixtures/layers/${tree}")
message(STATUS "layers: ${CASE}: no include points up or forms a cycle")
