# Monitoring never fails the node: an exporter problem is logged and the boot completes.
step_exporters() {
  step exporters "installing the metric exporters (non-fatal)"
  local script="${FMC_ROOT}${FMC_PREFIX}/bin/fmcluster-exporters.sh" rc=0
  cat >"${script}.tmp" <<'FMCLUSTER_EXPORTERS_SH'
#!/bin/bash
# exporters
FMCLUSTER_EXPORTERS_SH
  mv -f "${script}.tmp" "${script}"
  chmod 0755 "${script}"
  "${script}" || rc=$?
  if [[ ${rc} -ne 0 ]]; then
    warn "exporter installation failed (exit ${rc}); the node stays up without metrics, see the lines above"
  else
    log "exporters installed"
  fi
}
