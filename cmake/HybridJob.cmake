# Project-wide target conventions, applied per target rather than globally.

set(HYBRIDJOB_BIN_DIR "${CMAKE_BINARY_DIR}/bin")

option(HYBRIDJOB_FUZZ "Build the libFuzzer targets (Clang), instrumenting every library for them" OFF)
option(HYBRIDJOB_TSAN "Build with ThreadSanitizer" OFF)
if(HYBRIDJOB_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "HYBRIDJOB_FUZZ needs Clang (configure with CXX=clang++)")
endif()
if(HYBRIDJOB_TSAN AND HYBRIDJOB_FUZZ)
  message(FATAL_ERROR "HYBRIDJOB_TSAN cannot be combined with AddressSanitizer")
endif()

# Language level, warnings and sanitizers for one of the project's own targets.
function(hybridjob_target_defaults target)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_compile_features(${target} INTERFACE cxx_std_20)
    return()
  endif()
  target_compile_features(${target} PUBLIC cxx_std_20)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
  # Aggregates are initialised by their leading members; later members keep
  # their default member initialisers (GroupRole{"worker", 2, 8, 0}).
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wno-deprecated-declarations
                                           -Wno-missing-field-initializers)
  # A unity build includes sources into one file, so GCC takes their
  # anonymous-namespace helpers for a header's and warns when a class uses one.
  if(CMAKE_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
  # Clang checks the locking annotations of common/mutex.h.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    target_compile_options(${target} PRIVATE -Wthread-safety)
  endif()
  # The sanitizer tree: AddressSanitizer and UndefinedBehaviorSanitizer
  # everywhere; libFuzzer's coverage feedback only in the code a fuzz target
  # runs (hybridjob_fuzzer adds it there), since it slows every compile by a
  # fifth and a unit test has no use for it.
  if(HYBRIDJOB_FUZZ)
    target_compile_options(${target} PUBLIC -fsanitize=address,undefined -fno-omit-frame-pointer
                                            -fno-sanitize-recover=undefined)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
  if(HYBRIDJOB_TSAN)
    target_compile_options(${target} PUBLIC -fsanitize=thread -fno-omit-frame-pointer)
    target_link_options(${target} PUBLIC -fsanitize=thread)
  endif()
endfunction()

# hybridjob_test_code(TARGET): a test executable or a test helper library.
# In the normal tree it is compiled unoptimised: it waits on the API server and
# the binaries, and GCC builds it in about half the time at -O0 (the libraries
# it tests keep the tree's -O2). The sanitizer and ThreadSanitizer trees keep
# their own levels.
function(hybridjob_test_code target)
  if(NOT HYBRIDJOB_FUZZ AND NOT HYBRIDJOB_TSAN)
    target_compile_options(${target} PRIVATE -O0)
  endif()
endfunction()

# hybridjob_tsan_allow_fences(TARGET): for a target that includes Boost.Asio
# (cpprestsdk's listener and client). GCC warns that ThreadSanitizer does not
# model Asio's atomic_thread_fence; test/tsan.supp covers third-party frames,
# so under HYBRIDJOB_TSAN that warning must not fail the build.
function(hybridjob_tsan_allow_fences target)
  if(HYBRIDJOB_TSAN AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-error=tsan)
  endif()
endfunction()

# hybridjob_library(NAME SOURCES ... DEPS ...): one library per folder of src/.
function(hybridjob_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  add_library(hybridjob::${name} ALIAS ${name})
  target_include_directories(${name} PUBLIC "${PROJECT_SOURCE_DIR}/include")
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  hybridjob_target_defaults(${name})
endfunction()

# hybridjob_binary(NAME SOURCES ... DEPS ...): a shipped executable in build/bin/.
function(hybridjob_binary name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${HYBRIDJOB_BIN_DIR}")
  hybridjob_target_defaults(${name})
  install(TARGETS ${name} RUNTIME DESTINATION bin OPTIONAL)
endfunction()

# hybridjob_test(NAME LABEL unit|integration|e2e|fault [PROCESSORS N] [SHARED_CLUSTER]
#                SOURCES ... DEPS ... [INCLUDES dir...])
# A unit test executable is one ctest test that runs all its cases in one
# process: a process per case cost more than the cases themselves (about 0.6 s
# each under AddressSanitizer, for some 1,000 cases), and
# `tests/<name> --gtest_filter=...` runs one case. Every other GoogleTest case
# becomes a ctest test of its own, carrying the label. Integration, e2e and
# fault tests share the local cluster fixture and read its kubeconfig from the
# environment; each test works in a namespace of its own. Those that run the
# whole system, which no namespace isolates, say SHARED_CLUSTER (below).
function(hybridjob_test name)
  cmake_parse_arguments(ARG "SHARED_CLUSTER" "LABEL;TIMEOUT;PROCESSORS" "SOURCES;DEPS;INCLUDES"
                        ${ARGN})
  if(ARG_LABEL STREQUAL "unit" AND NOT HYBRIDJOB_UNIT_TESTS)
    return()
  endif()
  if(NOT ARG_TIMEOUT AND ARG_LABEL STREQUAL "unit")
    set(ARG_TIMEOUT 600)  # all the executable's cases
  elseif(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  if(HYBRIDJOB_TSAN)
    math(EXPR ARG_TIMEOUT "${ARG_TIMEOUT} * 5")  # ThreadSanitizer runs code 5-15x slower
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} hybridjob_test_main)
  target_include_directories(${name} PRIVATE ${ARG_INCLUDES})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/tests")
  hybridjob_target_defaults(${name})
  hybridjob_test_code(${name})
  set(props LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT})
  # SHARED_CLUSTER: the binary's tests start the whole system on one control
  # plane of their own, one test after another, instead of a private cluster
  # each (about 8 CPU seconds and 10 s a test): the first test starts it in
  # the directory named below, each later one empties it back to how it came
  # up (test/support/cluster_reset.h), and it sleeps between tests; the
  # local_cluster fixture's cleanup stops it with the others
  # (hack/test-clusters.sh). gtest_discover_tests passes no lists in
  # PROPERTIES, so such a test gets this one variable.
  if(ARG_SHARED_CLUSTER)
    list(APPEND props FIXTURES_REQUIRED local_cluster RESOURCE_LOCK ${name}_cluster
         ENVIRONMENT "HYBRIDJOB_SHARED_CLUSTER_DIR=${HYBRIDJOB_TEST_CLUSTER_DIR}-${name}")
  elseif(ARG_LABEL MATCHES "^(integration|e2e|fault)$")
    list(APPEND props FIXTURES_REQUIRED local_cluster
         ENVIRONMENT "HYBRIDJOB_TEST_CLUSTER_DIR=${HYBRIDJOB_TEST_CLUSTER_DIR}")
  endif()
  # End-to-end and fault tests run the whole binaries and spend most of their
  # time waiting for simulated work: several run side by side
  # (hack/run-tests.sh). A test that keeps both cores busy (the load test)
  # says PROCESSORS 2, so that `ctest -j 2` runs it alone.
  if(ARG_PROCESSORS)
    list(APPEND props PROCESSORS ${ARG_PROCESSORS})
  endif()
  # Without timings of its own (a clean clone), ctest starts the costliest
  # tests first: a test that needs two processors (it waits for two free
  # slots, and started late it leaves one idle), then the end-to-end and
  # fault tests, each up to two minutes, then the integration tests, mostly
  # seconds, which fill the gaps, so no long test starts last and runs on
  # alone.
  # The tests of a shared cluster run one after another, so each goes ahead
  # of other end-to-end tests as soon as the one before it ends: their chain
  # is the longest.
  if(ARG_PROCESSORS)
    list(APPEND props COST 1000)
  elseif(ARG_SHARED_CLUSTER)
    list(APPEND props COST 200)
  elseif(ARG_LABEL MATCHES "^(e2e|fault)$")
    list(APPEND props COST 100)
  elseif(ARG_LABEL STREQUAL "integration")
    list(APPEND props COST 10)
  endif()
  if(ARG_LABEL STREQUAL "unit")
    add_test(NAME ${name} COMMAND ${name} --gtest_brief=1)
    set_tests_properties(${name} PROPERTIES ${props})
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ${props})
  endif()
endfunction()

# hybridjob_link_closure(TARGET OUT): the project's static libraries TARGET
# links, directly or through one another, in OUT.
function(hybridjob_link_closure target out)
  set(closure "")
  set(todo ${target})
  while(todo)
    list(POP_FRONT todo current)
    get_target_property(deps ${current} LINK_LIBRARIES)
    foreach(dep IN LISTS deps)
      if(TARGET ${dep} AND dep MATCHES "^hybridjob_" AND NOT dep IN_LIST closure)
        get_target_property(type ${dep} TYPE)
        if(type STREQUAL "STATIC_LIBRARY")
          list(APPEND closure ${dep})
          list(APPEND todo ${dep})
        endif()
      endif()
    endforeach()
  endwhile()
  set(${out} ${closure} PARENT_SCOPE)
endfunction()
