step_guard_upgrades() {
  step guard-upgrades "keeping automatic upgrades and needrestart away from the GPU stack, the kernel and slurmd"
  guard_upgrades_os
}
