// One Atari game of a batch: an ALE instance with the Deep GA / ALE v5
// protocol around it (frame skip, sticky actions, no-op starts, FIRE reset,
// episode frame cap) and the preprocessed frame stack of its last step.
//
// The randomness of the protocol (no-op counts, sticky actions) comes from a
// SplitMix64 stream seeded at every reset, so an episode depends only on its
// seed and actions; workbench/envs/atari_reference.py implements the same rules
// on ale-py in Python and must stay in step with this file.
#ifndef WORKBENCH_OPS_KERNELS_ATARI_EMULATOR_H_
#define WORKBENCH_OPS_KERNELS_ATARI_EMULATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "frame_preprocessing.h"
#include "splitmix64.h"

namespace ale {
class ALEInterface;
class ALEState;
}  // namespace ale

namespace workbench {

struct AtariConfig {
  std::string rom_path;
  int frame_skip = 4;
  int noop_max = 30;
  float repeat_action_probability = 0.0f;
  int64_t max_episode_frames = 0;  // 0: no cap
  bool fire_reset = true;          // FIRE after the no-ops when the game has it
  int screen_size = 84;
  int stack_size = 4;
};

class AtariEmulator {
 public:
  // Loads the ROM (already checked by the caller with CheckRom). The resizer
  // (shared by a batch, from this game's screen size) may be given later with
  // set_resizer, before the first Reset.
  AtariEmulator(const AtariConfig& config, const FrameResizer* resizer);
  void set_resizer(const FrameResizer* resizer) { resizer_ = resizer; }
  ~AtariEmulator();
  AtariEmulator(const AtariEmulator&) = delete;
  AtariEmulator& operator=(const AtariEmulator&) = delete;

  // Starts a new episode: reset, 1..noop_max no-op frames (count drawn from
  // the seed), FIRE for one frame when enabled, then a stack of copies of the
  // first preprocessed frame. Rewards during the reset are not counted.
  void Reset(uint64_t seed);
  // One agent step: `action` (an index into the minimal action set) for
  // frame_skip frames with sticky actions; returns the summed reward. Stops
  // early at game over or at the frame cap.
  float Step(int action);

  bool started() const { return started_; }
  bool done() const { return terminated_ || truncated_; }
  bool truncated() const { return truncated_; }
  float episode_return() const { return episode_return_; }
  int lives() const;
  int episode_frame_number() const;

  // [screen_size, screen_size, stack_size], oldest frame first on the last axis.
  void WriteObservation(uint8_t* out) const;
  // [screen_height, screen_width, 3] of the last emulated frame.
  void WriteScreenRgb(uint8_t* out) const;
  // [128] console RAM.
  void WriteRam(uint8_t* out) const;

  int screen_height() const { return screen_height_; }
  int screen_width() const { return screen_width_; }
  const std::vector<int>& action_set() const { return action_set_; }

  static constexpr int kRamSize = 128;

 private:
  // Acts for one frame with an ALE action id and remembers it (sticky actions repeat it).
  int ActFrame(int ale_action);
  const uint8_t* LiveScreen() const;
  // Pushes the max of the live screen and `previous` (a screen, or null for none).
  void PushFrame(const uint8_t* previous);
  bool AtFrameCap() const;

  AtariConfig config_;
  const FrameResizer* resizer_;
  std::unique_ptr<ale::ALEInterface> ale_;
  std::unique_ptr<ale::ALEState> pristine_;  // the console as loaded; every Reset starts from it
  std::vector<int> action_set_;              // ALE action ids of the minimal action set
  bool has_fire_ = false;
  int screen_height_ = 0, screen_width_ = 0;

  SplitMix64 rng_;
  int previous_action_ = 0;  // ALE action id applied on the last frame
  bool started_ = false, terminated_ = false, truncated_ = false;
  float episode_return_ = 0.0f;

  std::vector<uint8_t> gray_;             // palette index -> grayscale
  std::vector<uint8_t> previous_screen_;  // palette indices of the frame before the last
  std::vector<uint8_t> stack_;            // [stack_size][screen_size^2], ring
  int stack_head_ = 0;                    // slot of the newest frame
  FrameResizer::Scratch scratch_;
};

// Empty string when `path` is a ROM that ALE supports, else the reason.
std::string CheckRom(const std::string& path);

// Silences ALE's console logging (once per process).
void QuietAleLogging();

}  // namespace workbench

#endif  // WORKBENCH_OPS_KERNELS_ATARI_EMULATOR_H_
