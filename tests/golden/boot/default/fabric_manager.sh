step_fabric_manager() {
  step fabric-manager "Fabric Manager 595.112.07: started if not running (never stopped)"
  local unit=nvidia-fabricmanager i
  if service_active "${unit}"; then
    log "${unit} already active, left alone"
    return
  fi
  systemctl enable "${unit}" >/dev/null
  systemctl start "${unit}"
  for ((i = 0; i < FMC_TIMEOUT_FABRIC_MANAGER_START_S; i += 2)); do
    service_active "${unit}" && break
    sleep 2
  done
  service_active "${unit}" \
    || die "${unit} is $(systemctl is-active "${unit}" || true) after ${FMC_TIMEOUT_FABRIC_MANAGER_START_S} s; see journalctl -u ${unit} (a version mismatch logs 'don't match with driver version')"
  log "${unit} active"
}
