# course_add_chapter(): everything one chapter folder needs, written once.
#
#   course_add_chapter(
#     PROGRAM      sync_copy        # sync_copy.cu (program) and sync_copy_test.cu (GoogleTest)
#     MIN_ARCH     80               # compute capability needed: 75, 80, 90 or 90a
#     PTX_ARCHS    90               # more architectures to emit PTX for (host tests may read it)
#     PTX_EXPECT   "cp\\.async"     # regexes that must appear in the PTX for MIN_ARCH
#     PTX_REJECT   ...              # regexes that must not
#     SASS_EXPECT  "LDGSTS"         # regexes that must appear in the machine code (needs cuobjdump)
#     SASS_REJECT  ...)
#
# Creates, for folder NN_topic:
#   target NN_topic        the program (executable name: PROGRAM), also a CTest test labelled chapter
#   target NN_topic_test   the GoogleTest suite (tests labelled host or gpu, and NN_topic)
#   tests NN_topic.ptx and NN_topic.sass, which check the emitted code (labelled codegen)
set(COURSE_SKIP_RETURN_CODE 77)
set(COURSE_CHECK_CODE_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/CourseCheckCode.cmake")

function(course_add_chapter)
  cmake_parse_arguments(ARG "" "PROGRAM;MIN_ARCH" "PTX_ARCHS;PTX_EXPECT;PTX_REJECT;SASS_EXPECT;SASS_REJECT" ${ARGN})
  get_filename_component(chapter "${CMAKE_CURRENT_SOURCE_DIR}" NAME)
  set(source "${CMAKE_CURRENT_SOURCE_DIR}/${ARG_PROGRAM}.cu")
  set(test_source "${CMAKE_CURRENT_SOURCE_DIR}/${ARG_PROGRAM}_test.cu")
  course_chapter_architectures(archs ${ARG_MIN_ARCH})
  message(STATUS "${chapter}: CUDA architectures ${archs}")

  add_executable(${chapter} "${source}")
  set_target_properties(${chapter} PROPERTIES OUTPUT_NAME ${ARG_PROGRAM} CUDA_ARCHITECTURES "${archs}")
  target_link_libraries(${chapter} PRIVATE course::host)

  add_executable(${chapter}_test "${test_source}")
  set_target_properties(${chapter}_test PROPERTIES OUTPUT_NAME ${ARG_PROGRAM}_test CUDA_ARCHITECTURES "${archs}")
  target_compile_definitions(${chapter}_test PRIVATE COURSE_NO_MAIN)
  target_include_directories(${chapter}_test PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
  target_link_libraries(${chapter}_test PRIVATE course::host)
  course_add_gtest(${chapter}_test LABELS ${chapter})

  # The program itself, verify-only: what the "chapters" workflow runs, in order.
  add_test(NAME ${chapter} COMMAND ${chapter})
  set_tests_properties(${chapter} PROPERTIES
    LABELS "chapter;gpu;${chapter}"
    SKIP_RETURN_CODE ${COURSE_SKIP_RETURN_CODE}
    TIMEOUT ${COURSE_TEST_TIMEOUT})

  # PTX, generated at build time on any machine: for the chapter's minimum architecture and
  # for each of PTX_ARCHS (library code can take another path per architecture). Host tests
  # inspect individual kernels in COURSE_PTX_DIR/<program>.compute_<arch>.ptx.
  # The PTX depends on the chapter's own headers and the shared library's, not only the .cu.
  file(GLOB ptx_headers CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*.hpp" "${CMAKE_CURRENT_SOURCE_DIR}/*.cuh"
       "${PROJECT_SOURCE_DIR}/common/course/*.hpp" "${PROJECT_SOURCE_DIR}/common/course/*.cuh")
  set(ptx_files "")
  foreach(arch IN LISTS ARG_MIN_ARCH ARG_PTX_ARCHS)
    set(file "${CMAKE_CURRENT_BINARY_DIR}/${ARG_PROGRAM}.compute_${arch}.ptx")
    add_custom_command(OUTPUT "${file}"
      COMMAND "${CMAKE_CUDA_COMPILER}" -std=c++17 -ptx -arch=compute_${arch} -DCOURSE_NO_MAIN
              -I "${PROJECT_SOURCE_DIR}/common" "${source}" -o "${file}"
      DEPENDS "${source}" ${ptx_headers}
      COMMENT "PTX of ${chapter} for compute_${arch}"
      VERBATIM)
    list(APPEND ptx_files "${file}")
  endforeach()
  list(GET ptx_files 0 ptx)
  add_custom_target(${chapter}_ptx ALL DEPENDS ${ptx_files})
  add_dependencies(${chapter}_test ${chapter}_ptx)
  target_compile_definitions(${chapter}_test PRIVATE COURSE_PTX_DIR="${CMAKE_CURRENT_BINARY_DIR}")

  string(REPLACE ";" "~~" ptx_expect "${ARG_PTX_EXPECT}")
  string(REPLACE ";" "~~" ptx_reject "${ARG_PTX_REJECT}")
  add_test(NAME ${chapter}.ptx COMMAND "${CMAKE_COMMAND}"
    -DMODE=ptx -DINPUT=${ptx} -DEXPECT=${ptx_expect} -DREJECT=${ptx_reject}
    -P "${COURSE_CHECK_CODE_SCRIPT}")
  set_tests_properties(${chapter}.ptx PROPERTIES LABELS "host;codegen;${chapter}" TIMEOUT 60)

  string(REPLACE ";" "~~" sass_expect "${ARG_SASS_EXPECT}")
  string(REPLACE ";" "~~" sass_reject "${ARG_SASS_REJECT}")
  add_test(NAME ${chapter}.sass COMMAND "${CMAKE_COMMAND}"
    -DMODE=sass -DINPUT=$<TARGET_FILE:${chapter}> -DEXPECT=${sass_expect} -DREJECT=${sass_reject}
    -DTOOL_DIR=${CUDAToolkit_BIN_DIR}
    -P "${COURSE_CHECK_CODE_SCRIPT}")
  set_tests_properties(${chapter}.sass PROPERTIES
    LABELS "host;codegen;${chapter}" TIMEOUT 60 SKIP_REGULAR_EXPRESSION "SKIPPED:")
endfunction()
