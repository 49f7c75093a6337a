step_fabric_state() {
  step fabric-state "waiting up to ${FMC_TIMEOUT_FABRIC_STATE_S} s for GPU fabric registration"
  local i states bad
  for ((i = 0; i <= FMC_TIMEOUT_FABRIC_STATE_S; i += 5)); do
    states="$(fabric_states)"
    bad="$(printf '%s\n' "${states}" | grep -cvx Completed || true)"
    if [[ -n ${states} && ${bad} -eq 0 ]]; then
      log "fabric state Completed on all GPUs after ${i} s"
      return
    fi
    sleep 5
  done
  die "GPU fabric registration did not complete within ${FMC_TIMEOUT_FABRIC_STATE_S} s (states: $(printf '%s' "${states}" | sort | uniq -c | tr '\n' ' ')); check Fabric Manager"
}
