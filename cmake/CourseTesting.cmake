# GoogleTest: the installed package first, a download only when it is missing.
find_package(GTest QUIET)
if(NOT GTest_FOUND)
  message(STATUS "GoogleTest not found installed (find_package(GTest)); fetching release 1.12.1 from GitHub. "
                 "Install it (Debian: apt-get install libgtest-dev) to build without network access.")
  include(FetchContent)
  FetchContent_Declare(googletest
    URL https://github.com/google/googletest/archive/refs/tags/release-1.12.1.tar.gz
    URL_HASH SHA256=81964fe578e9bd7c94dfdb09c8e4d6e6759e19967e397dbea48d1c10e45d0df2)
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  FetchContent_MakeAvailable(googletest)
  if(NOT TARGET GTest::gtest_main)
    add_library(GTest::gtest_main ALIAS gtest_main)
  endif()
endif()
include(GoogleTest)

# Every test has a timeout (seconds); GPU tests that deadlock are diagnosed well before it.
set(COURSE_TEST_TIMEOUT 120 CACHE STRING "Timeout of each test, in seconds")
# The bounded wait of the GPU tests that wait it out on purpose (suites ...Diagnosis, ...Broken).
set(COURSE_TEST_WAIT_LIMIT_MS 1000 CACHE STRING "Bounded-wait limit of the tests that wait it out on purpose, in ms")

# Adds a GoogleTest executable whose suites are split by name (a parameterised
# suite's instantiation prefix, Variants/Sm80_..., is allowed):
#   Host*  CPU-only tests (label host)
#   Sm*    GPU tests, named after the requirement, e.g. Sm80_MemcpyAsync (label gpu)
# LABELS adds further labels (the chapter) to every test of the calling directory; PREFIX starts
# the name of every test (an exercise's tests are NN_topic.exercises.<name>.<Suite>.<Test>).
function(course_add_gtest target)
  cmake_parse_arguments(ARG "" "PREFIX" "LABELS" ${ARGN})
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  foreach(source IN LISTS sources)
    if(NOT IS_ABSOLUTE "${source}")
      set(source "${source_dir}/${source}")
    endif()
    course_check_suite_names("${source}")
  endforeach()
  target_link_libraries(${target} PRIVATE GTest::gtest_main)
  # gtest_discover_tests flattens a list given as one property value, so each discovered
  # test gets one label here (host or gpu); further labels apply to the whole directory.
  set_property(DIRECTORY APPEND PROPERTY LABELS ${ARG_LABELS})
  gtest_discover_tests(${target}
    TEST_PREFIX "${ARG_PREFIX}"
    TEST_FILTER "Host*:*/Host*"
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS host TIMEOUT ${COURSE_TEST_TIMEOUT})
  # GPU suites named ...Diagnosis or ...Broken run broken kernels that wait out the bounded wait
  # on purpose, one at a time on the machine (course::TrapLock): they get a bound of 1 s instead
  # of the compiled 4 s (COURSE_WAIT_LIMIT_MS), still hundreds of times any correct wait.
  set(waits_out "Sm*Diagnosis.*:Sm*Broken.*:*/Sm*Diagnosis.*:*/Sm*Broken.*")
  gtest_discover_tests(${target}
    TEST_PREFIX "${ARG_PREFIX}"
    TEST_FILTER "Sm*:*/Sm*-${waits_out}"
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS gpu TIMEOUT ${COURSE_TEST_TIMEOUT})
  gtest_discover_tests(${target}
    TEST_PREFIX "${ARG_PREFIX}"
    TEST_FILTER "${waits_out}"
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS gpu TIMEOUT ${COURSE_TEST_TIMEOUT} ENVIRONMENT COURSE_WAIT_LIMIT_MS=${COURSE_TEST_WAIT_LIMIT_MS})
endfunction()

# The naming rule, checked when the project is configured: every suite a test source defines
# (TEST, TEST_F, TEST_P, TYPED_TEST) is named Host... or Sm<capability>[a]_...; the filters above
# would silently leave any other suite out of CTest, so a broken name stops the configure step.
function(course_check_suite_names source)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${source}")
  file(READ "${source}" text)
  string(REGEX MATCHALL "(^|[^A-Za-z0-9_])(TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P)[ \t\n]*\\([ \t\n]*[A-Za-z0-9_]+"
         uses "${text}")
  set(broken "")
  foreach(use IN LISTS uses)
    string(REGEX REPLACE ".*\\([ \t\n]*" "" suite "${use}")
    if(NOT suite MATCHES "^(Host[A-Za-z0-9_]*|Sm[0-9]+a?_[A-Za-z0-9_]+)$")
      list(APPEND broken "${suite}")
    endif()
  endforeach()
  if(broken)
    list(REMOVE_DUPLICATES broken)
    list(JOIN broken ", " names)
    message(FATAL_ERROR "${source}: test suite names must start with Host (CPU tests) or Sm<capability>_ "
                        "(GPU tests, e.g. Sm90_Tma1d); these would never run: ${names}")
  endif()
endfunction()
