// The limit of bench/mujoco.py: MuJoCo's own step loop in C++, one thread, no
// TensorFlow and no Python. Steps `simulations` copies of the model at
// `xml_path` for `steps` environment steps each, in lockstep; an environment
// step is a policy-sized matmul (state -> 64 tanh -> controls, fixed random
// weights), then frame_skip mj_step calls and mj_rnePostConstraint, as
// Gymnasium's step does. Prints the environment steps per second.
//
//   mujoco_raw_loop XML_PATH SIMULATIONS STEPS FRAME_SKIP
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "mujoco/mujoco.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s XML_PATH SIMULATIONS STEPS FRAME_SKIP\n", argv[0]);
    return 2;
  }
  const int simulations = std::atoi(argv[2]), steps = std::atoi(argv[3]), frame_skip = std::atoi(argv[4]);
  char error[1024] = "";
  mjModel* model = mj_loadXML(argv[1], nullptr, error, sizeof(error));
  if (model == nullptr) {
    std::fprintf(stderr, "could not load %s: %s\n", argv[1], error);
    return 1;
  }
  const int inputs = model->nq + model->nv, hidden = 64, outputs = model->nu;
  std::mt19937 rng(0);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> w1(inputs * hidden), w2(hidden * outputs), x(inputs), h(hidden);
  for (double& w : w1) w = normal(rng) / std::sqrt(inputs);
  for (double& w : w2) w = normal(rng) / std::sqrt(hidden);
  std::vector<mjData*> datas(simulations);
  for (mjData*& d : datas) {
    d = mj_makeData(model);
    mj_forward(model, d);
  }
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < steps; ++t) {
    for (mjData* d : datas) {
      for (int i = 0; i < model->nq; ++i) x[i] = d->qpos[i];
      for (int i = 0; i < model->nv; ++i) x[model->nq + i] = d->qvel[i];
      for (int j = 0; j < hidden; ++j) {
        double s = 0.0;
        for (int i = 0; i < inputs; ++i) s += x[i] * w1[i * hidden + j];
        h[j] = std::tanh(s);
      }
      for (int k = 0; k < outputs; ++k) {
        double s = 0.0;
        for (int j = 0; j < hidden; ++j) s += h[j] * w2[j * outputs + k];
        d->ctrl[k] = std::tanh(s);
      }
      for (int f = 0; f < frame_skip; ++f) mj_step(model, d);
      mj_rnePostConstraint(model, d);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%.3f\n", static_cast<double>(steps) * simulations / seconds);
  for (mjData* d : datas) mj_deleteData(d);
  mj_deleteModel(model);
  return 0;
}
