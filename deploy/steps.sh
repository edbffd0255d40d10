# Sourced by the e2e scripts: steps with their time, a report at the end, and die.
# Needs RUN_NAME (what the report and die name).

TIMES=()
step_started=0
step() {
  finish_step
  STEP="$1"
  step_started=$SECONDS
  printf '\n==> %s\n' "$STEP"
}
finish_step() {
  if [[ -n "${STEP:-}" ]]; then
    TIMES+=("$(printf '%-8s %4ds' "$STEP" $((SECONDS - step_started)))")
  fi
  STEP=""
}
report() {
  finish_step
  printf '\n%s: time per step\n' "$RUN_NAME"
  printf '  %s\n' "${TIMES[@]}"
  printf '  %-8s %4ds\n' total "$SECONDS"
}
die() {
  printf '%s: FAILED: %s\n' "$RUN_NAME" "$*" >&2
  exit 1
}
