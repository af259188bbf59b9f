// The TensorFlow, ALE and (for the MuJoCo library) MuJoCo versions this library was
// compiled against, as a marker string that the Python loader reads from the file
// before loading it.
#ifndef WORKBENCH_TF_VERSION
#error "WORKBENCH_TF_VERSION must be defined by the build (setup.py)"
#endif
#ifndef WORKBENCH_ALE_VERSION
#error "WORKBENCH_ALE_VERSION must be defined by the build (setup.py)"
#endif
#ifdef WORKBENCH_MUJOCO_VERSION
#define WORKBENCH_MUJOCO_RECORD "mujoco=" WORKBENCH_MUJOCO_VERSION ";"
#else
#define WORKBENCH_MUJOCO_RECORD ""
#endif

extern "C" __attribute__((used, visibility("default"))) const char kWorkbenchBuildInfo[] =
    "WORKBENCH_BUILD_INFO tensorflow=" WORKBENCH_TF_VERSION ";ale=" WORKBENCH_ALE_VERSION ";" WORKBENCH_MUJOCO_RECORD;
