# nccl-tests from its pinned source archive, built with MPI against the locked NCCL and CUDA, so the node check
# can run the single-node all_reduce through the network plugin (NVIDIA/nccl-tests README: make MPI=1
# MPI_HOME=... CUDA_HOME=... NCCL_HOME=...; binaries in ./build).
step_nccl_tests() {
  step nccl-tests "nccl-tests 2.17.6 built against NCCL ${FMC_LOCK_NCCL} and CUDA ${FMC_LOCK_CUDA}"
  local dir="${FMC_ROOT}/opt/nccl-tests" src="${FMC_ROOT}${FMC_CACHE}/nccl-tests-2.17.6.tar.gz"
  if [[ -x ${dir}/build/all_reduce_perf && "$(cat "${dir}/.fmcluster-version" 2>/dev/null || true)" == "2.17.6" ]]; then
    log "nccl-tests 2.17.6 already built at /opt/nccl-tests, left alone"
    return
  fi
  if ! command -v make >/dev/null 2>&1 || ! command -v g++ >/dev/null 2>&1; then
    install_packages make g++
  fi
  fetch "https://github.com/NVIDIA/nccl-tests/archive/v2.17.6.tar.gz" "${src}" "38974e70342150ede0e3fb8fd24bfe60ccbde90fa20241716ba8bb338e6b61a0"
  rm -rf "${dir}"
  mkdir -p "${dir}"
  tar -xzf "${src}" -C "${dir}" --strip-components=1
  # A failed build must not fail the node (ParallelCluster would shut it down): it is reported, and the node check
  # then says its NCCL run was skipped.
  if ! make -C "${dir}" -j "$(nproc)" MPI=1 MPI_HOME="${FMC_ROOT}/opt/amazon/openmpi" CUDA_HOME="${FMC_ROOT}${FMC_CUDA_PATH}" \
    NCCL_HOME="${FMC_ROOT}/usr" || [[ ! -x ${dir}/build/all_reduce_perf ]]; then
    warn "nccl-tests build failed: the node check cannot run its single-node NCCL check through the network plugin"
    return 0
  fi
  printf '%s\n' "2.17.6" >"${dir}/.fmcluster-version"
  log "nccl-tests 2.17.6 built at /opt/nccl-tests/build"
}
