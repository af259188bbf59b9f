// The per-game protocol around ALE (see atari_emulator.h).
#include "atari_emulator.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>

#include "ale/ale_interface.hpp"
#include "ale/common/ColourPalette.hpp"
#include "ale/emucore/OSystem.hxx"

namespace workbench {

void QuietAleLogging() {
  static std::once_flag once;
  std::call_once(once, [] { ale::Logger::setMode(ale::Logger::Error); });
}

std::string CheckRom(const std::string& path) {
  QuietAleLogging();
  try {
    if (!ale::ALEInterface::isSupportedROM(path).has_value()) {
      return "is not a ROM that ALE supports (its MD5 is not in ALE's table)";
    }
  } catch (const std::exception& error) {
    return error.what();
  }
  return "";
}

AtariEmulator::AtariEmulator(const AtariConfig& config, const FrameResizer* resizer)
    : config_(config), resizer_(resizer), ale_(new ale::ALEInterface()) {
  QuietAleLogging();
  // The protocol's randomness is ours (SplitMix64 per episode); ALE itself runs
  // deterministically, one frame per act().
  ale_->setInt("random_seed", 0);
  ale_->setFloat("repeat_action_probability", 0.0f);
  ale_->setInt("frame_skip", 1);
  ale_->setInt("max_num_frames_per_episode", 0);
  ale_->loadROM(config_.rom_path);
  for (ale::Action action : ale_->getMinimalActionSet()) {
    action_set_.push_back(static_cast<int>(action));
    if (action == ale::PLAYER_A_FIRE) has_fire_ = true;
  }
  // ALE's grayscale palette, round(0.2989 R + 0.5870 G + 0.1140 B) per colour,
  // as a table over palette indices (screens hold even indices 0..254).
  std::vector<uint8_t> indices(255);
  for (int i = 0; i < 255; ++i) indices[i] = static_cast<uint8_t>(i);
  std::vector<unsigned char> gray;
  ale_->theOSystem->colourPalette().applyPaletteGrayscale(gray, indices.data(), indices.size());
  gray_.assign(256, 0);
  std::copy(gray.begin(), gray.end(), gray_.begin());
  screen_height_ = static_cast<int>(ale_->getScreen().height());
  screen_width_ = static_cast<int>(ale_->getScreen().width());
  const size_t screen = static_cast<size_t>(screen_height_) * screen_width_;
  screens_[0].assign(screen, 0);
  screens_[1].assign(screen, 0);
  const size_t frame = static_cast<size_t>(config_.screen_size) * config_.screen_size;
  stack_.assign(frame * config_.stack_size, 0);
}

AtariEmulator::~AtariEmulator() = default;

int AtariEmulator::lives() const { return ale_->lives(); }

int AtariEmulator::episode_frame_number() const { return ale_->getEpisodeFrameNumber(); }

bool AtariEmulator::AtFrameCap() const {
  return config_.max_episode_frames > 0 &&
         ale_->getEpisodeFrameNumber() >= config_.max_episode_frames;
}

int AtariEmulator::ActFrame(int ale_action) {
  previous_action_ = ale_action;
  return ale_->act(static_cast<ale::Action>(ale_action));
}

void AtariEmulator::GrabScreen(int slot) {
  std::memcpy(screens_[slot].data(), ale_->getScreen().getArray(), screens_[slot].size());
}

void AtariEmulator::PushFrame(int newest_slot, bool same_as_previous) {
  const size_t frame = static_cast<size_t>(config_.screen_size) * config_.screen_size;
  stack_head_ = (stack_head_ + 1) % config_.stack_size;
  const uint8_t* newest = screens_[newest_slot].data();
  const uint8_t* previous = same_as_previous ? newest : screens_[newest_slot ^ 1].data();
  resizer_->MaxAndResize(newest, previous, gray_.data(), stack_.data() + stack_head_ * frame, &scratch_);
}

void AtariEmulator::Reset(uint64_t seed) {
  ale_->reset_game();
  rng_.Seed(seed);
  started_ = true;
  terminated_ = truncated_ = false;
  episode_return_ = 0.0f;
  previous_action_ = ale::PLAYER_A_NOOP;

  int newest = 0, screens_in_call = 1;
  GrabScreen(newest);
  auto act_and_grab = [&](int ale_action) {
    ActFrame(ale_action);
    newest ^= 1;
    GrabScreen(newest);
    ++screens_in_call;
    terminated_ = ale_->game_over(false);
    truncated_ = !terminated_ && AtFrameCap();
    return !done();
  };
  const int noops = config_.noop_max > 0 ? 1 + static_cast<int>(rng_.Next() % config_.noop_max) : 0;
  bool running = true;
  for (int i = 0; i < noops && running; ++i) running = act_and_grab(ale::PLAYER_A_NOOP);
  if (running && config_.fire_reset && has_fire_) act_and_grab(ale::PLAYER_A_FIRE);

  PushFrame(newest, screens_in_call == 1);
  const size_t frame = static_cast<size_t>(config_.screen_size) * config_.screen_size;
  for (int s = 0; s < config_.stack_size; ++s) {
    if (s != stack_head_) std::memcpy(stack_.data() + s * frame, stack_.data() + stack_head_ * frame, frame);
  }
}

float AtariEmulator::Step(int action) {
  const int requested = action_set_[action];
  const double sticky = config_.repeat_action_probability;
  int64_t reward = 0;
  int newest = 0, screens_in_call = 0;
  for (int f = 0; f < config_.frame_skip; ++f) {
    int applied = requested;
    if (sticky > 0.0 && rng_.Uniform() < sticky) applied = previous_action_;
    reward += ActFrame(applied);
    terminated_ = ale_->game_over(false);
    truncated_ = !terminated_ && AtFrameCap();
    if (f >= config_.frame_skip - 2 || done()) {
      if (screens_in_call > 0) newest ^= 1;
      GrabScreen(newest);
      ++screens_in_call;
    }
    if (done()) break;
  }
  PushFrame(newest, screens_in_call == 1);
  episode_return_ += static_cast<float>(reward);
  return static_cast<float>(reward);
}

void AtariEmulator::WriteObservation(uint8_t* out) const {
  const int size = config_.screen_size, stack = config_.stack_size;
  const size_t frame = static_cast<size_t>(size) * size;
  for (int k = 0; k < stack; ++k) {
    // Oldest first: slot head+1 (mod stack) ... head.
    const uint8_t* src = stack_.data() + ((stack_head_ + 1 + k) % stack) * frame;
    for (size_t p = 0; p < frame; ++p) out[p * stack + k] = src[p];
  }
}

void AtariEmulator::WriteScreenRgb(uint8_t* out) const {
  std::vector<unsigned char> rgb;
  ale_->getScreenRGB(rgb);
  std::memcpy(out, rgb.data(), rgb.size());
}

void AtariEmulator::WriteRam(uint8_t* out) const {
  const ale::ALERAM& ram = ale_->getRAM();
  std::memcpy(out, ram.array(), std::min<size_t>(ram.size(), kRamSize));
}

}  // namespace workbench
