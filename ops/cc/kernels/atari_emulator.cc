// The per-game protocol around ALE (see atari_emulator.h).
#include "atari_emulator.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>

#include "ale/ale_interface.hpp"
#include "ale/common/ColourPalette.hpp"
#include "ale/emucore/OSystem.hxx"
#include "ale/games/RomSettings.hpp"
#include "ale/games/Roms.hpp"

namespace workbench {

void QuietAleLogging() {
  static std::once_flag once;
  std::call_once(once, [] { ale::Logger::setMode(ale::Logger::Error); });
}

std::string CheckRom(const std::string& path) {
  QuietAleLogging();
  // ALE's loadROM exits the process on a file it cannot wrap, so check first
  // with its own rule: the MD5 or else the file name must name a supported game
  // (the ale-py wheel ships a few ROMs, e.g. combat.bin, known by name only).
  try {
    if (ale::ALEInterface::isSupportedROM(path).has_value()) return "";
    std::unique_ptr<ale::RomSettings> by_name(ale::buildRomRLWrapper(path, ""));
    if (by_name != nullptr) return "";
    return "is not a ROM that ALE supports (neither its MD5 nor its file name is in ALE's table)";
  } catch (const std::exception& error) {
    return error.what();
  }
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
  // The whole console (and ALE's RNG) as loaded: every episode restarts from it,
  // so an episode does not depend on the episodes before it in this emulator
  // (reset_game alone leaves console state behind, e.g. in Frostbite).
  pristine_ = std::make_unique<ale::ALEState>(ale_->cloneState(/*include_rng=*/true));
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
  previous_screen_.assign(screen, 0);
  const size_t frame = static_cast<size_t>(config_.screen_size) * config_.screen_size;
  stack_.assign(frame * config_.stack_size, 0);
}

AtariEmulator::~AtariEmulator() = default;

int AtariEmulator::lives() const { return ale_->lives(); }

int AtariEmulator::episode_frame_number() const { return ale_->getEpisodeFrameNumber(); }

bool AtariEmulator::AtFrameCap() const {
  return config_.max_episode_frames > 0 && ale_->getEpisodeFrameNumber() >= config_.max_episode_frames;
}

int AtariEmulator::ActFrame(int ale_action) {
  previous_action_ = ale_action;
  return ale_->act(static_cast<ale::Action>(ale_action));
}

const uint8_t* AtariEmulator::LiveScreen() const { return ale_->getScreen().getArray(); }

void AtariEmulator::PushFrame(const uint8_t* previous) {
  const size_t frame = static_cast<size_t>(config_.screen_size) * config_.screen_size;
  stack_head_ = (stack_head_ + 1) % config_.stack_size;
  const uint8_t* newest = LiveScreen();
  resizer_->MaxAndResize(newest, previous != nullptr ? previous : newest, gray_.data(),
                         stack_.data() + stack_head_ * frame, &scratch_);
}

void AtariEmulator::Reset(uint64_t seed) {
  ale_->restoreState(*pristine_);
  ale_->reset_game();
  rng_.Seed(seed);
  started_ = true;
  terminated_ = truncated_ = false;
  episode_return_ = 0.0f;
  previous_action_ = ale::PLAYER_A_NOOP;

  // The observation is the max of the last two screens of the call (the
  // screen after reset_game counts as one).
  bool have_previous = false;
  auto act = [&](int ale_action) {
    std::memcpy(previous_screen_.data(), LiveScreen(), previous_screen_.size());
    have_previous = true;
    ActFrame(ale_action);
    terminated_ = ale_->game_over(false);
    truncated_ = !terminated_ && AtFrameCap();
    return !done();
  };
  const int noops = config_.noop_max > 0 ? 1 + static_cast<int>(rng_.Next() % config_.noop_max) : 0;
  bool running = true;
  for (int i = 0; i < noops && running; ++i) running = act(ale::PLAYER_A_NOOP);
  if (running && config_.fire_reset && has_fire_) act(ale::PLAYER_A_FIRE);

  PushFrame(have_previous ? previous_screen_.data() : nullptr);
  const size_t frame = static_cast<size_t>(config_.screen_size) * config_.screen_size;
  for (int s = 0; s < config_.stack_size; ++s) {
    if (s != stack_head_) std::memcpy(stack_.data() + s * frame, stack_.data() + stack_head_ * frame, frame);
  }
}

float AtariEmulator::Step(int action) {
  const int requested = action_set_[action];
  const double sticky = config_.repeat_action_probability;
  int64_t reward = 0;
  // The observation is the max of the last two frames of the step (one
  // frame when the episode ends before the second-to-last).
  bool have_previous = false;
  for (int f = 0; f < config_.frame_skip; ++f) {
    int applied = requested;
    if (sticky > 0.0 && rng_.Uniform() < sticky) applied = previous_action_;
    reward += ActFrame(applied);
    terminated_ = ale_->game_over(false);
    truncated_ = !terminated_ && AtFrameCap();
    if (done()) break;
    if (f == config_.frame_skip - 2) {
      std::memcpy(previous_screen_.data(), LiveScreen(), previous_screen_.size());
      have_previous = true;
    }
  }
  PushFrame(have_previous ? previous_screen_.data() : nullptr);
  episode_return_ += static_cast<float>(reward);
  return static_cast<float>(reward);
}

void AtariEmulator::WriteObservation(uint8_t* out) const {
  const int size = config_.screen_size, stack = config_.stack_size;
  const size_t frame = static_cast<size_t>(size) * size;
  // Oldest first: slot head+1 (mod stack) ... head.
  auto slot = [&](int k) { return stack_.data() + ((stack_head_ + 1 + k) % stack) * frame; };
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the 4-frame path writes little-endian words");
  if (stack == 4) {  // the usual case: one 32-bit word per pixel, vectorised
    const uint8_t *c0 = slot(0), *c1 = slot(1), *c2 = slot(2), *c3 = slot(3);
    for (size_t p = 0; p < frame; ++p) {
      const uint32_t word = uint32_t{c0[p]} | uint32_t{c1[p]} << 8 | uint32_t{c2[p]} << 16 | uint32_t{c3[p]} << 24;
      std::memcpy(out + 4 * p, &word, 4);  // little-endian: c0 first
    }
    return;
  }
  for (int k = 0; k < stack; ++k) {
    const uint8_t* src = slot(k);
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
