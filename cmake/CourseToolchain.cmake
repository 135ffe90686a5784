# The oldest toolkit the course builds with, checked once when the project is configured.
#
# Chapters 06-09 and 12 use cuda::ptx overloads of the bulk copies that emit PTX ISA 8.6,
# which nvcc 12.8 introduced; older nvcc versions stop with errors far from the cause.
set(COURSE_MIN_CUDA_VERSION 12.8)

function(course_check_cuda_version version)
  if(version VERSION_LESS COURSE_MIN_CUDA_VERSION)
    message(FATAL_ERROR "The course needs nvcc ${COURSE_MIN_CUDA_VERSION} or newer (CUDA Toolkit "
                        "${COURSE_MIN_CUDA_VERSION}: PTX ISA 8.6 for the bulk-copy wrappers of cuda::ptx); "
                        "this build found nvcc ${version}. Install a newer toolkit or point "
                        "CMAKE_CUDA_COMPILER at one.")
  endif()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE)
  # cmake -DVERSION=<x.y> -P CourseToolchain.cmake: the check alone (a test).
  course_check_cuda_version("${VERSION}")
  message("nvcc ${VERSION} is new enough")
else()
  course_check_cuda_version("${CMAKE_CUDA_COMPILER_VERSION}")
endif()
