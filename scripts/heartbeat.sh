#!/usr/bin/env bash
# Sourced by set-up steps: run_logged LABEL LOGFILE CMD... runs a long command with
# its output in LOGFILE, says that it started, prints a heartbeat every HEARTBEAT_S
# seconds (default 30), and on failure shows the log's last 40 lines.
run_logged() {
    local label="$1" log="$2"
    shift 2
    mkdir -p "$(dirname "$log")"
    local every="${HEARTBEAT_S:-30}"
    local start=$SECONDS next=$every
    echo "    $label: started $(date +%H:%M:%S) (log: $log)"
    "$@" >"$log" 2>&1 &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        if [ $((SECONDS - start)) -ge "$next" ]; then
            echo "    $label: still running, $((SECONDS - start)) s ($(tail -c 300 "$log" | tr '\r' '\n' | grep -v '^\s*$' | tail -1 | cut -c1-100))"
            next=$((next + every))
        fi
    done
    if ! wait "$pid"; then
        echo "    $label: FAILED after $((SECONDS - start)) s; the log's last lines:" >&2
        tail -40 "$log" >&2
        return 1
    fi
    echo "    $label: done in $((SECONDS - start)) s"
}
