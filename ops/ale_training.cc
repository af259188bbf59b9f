// Training run for the profile-guided build of ALE (ops/build_ale.py): plays
// each ROM given on the command line with random actions, reading grayscale
// screens as the emulation ops do, so the compiler learns the emulator's hot
// paths. Not part of the ops library.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "ale/ale_interface.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s FRAMES ROM...\n", argv[0]);
    return 2;
  }
  ale::Logger::setMode(ale::Logger::Error);
  const long frames = std::atol(argv[1]);
  for (int k = 2; k < argc; ++k) {
    ale::ALEInterface emulator;
    emulator.setInt("random_seed", 0);
    emulator.setFloat("repeat_action_probability", 0.0f);
    emulator.loadROM(argv[k]);
    const ale::ActionVect actions = emulator.getMinimalActionSet();
    std::mt19937 random(k);
    std::vector<unsigned char> screen;
    for (long i = 0; i < frames; ++i) {
      emulator.act(actions[random() % actions.size()]);
      if (i % 4 == 3) emulator.getScreenGrayscale(screen);
      if (emulator.game_over()) emulator.reset_game();
    }
  }
  return 0;
}
