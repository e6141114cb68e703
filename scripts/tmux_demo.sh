#!/usr/bin/env bash
# Start the real app in a tmux terminal on the bundled demo checkpoint, type a prompt, wait for the answer
# (or for the canvas, with CAPTURE=canvas) and print the screen to stdout.
#
#   scripts/tmux_demo.sh ["prompt"]          env: WAIT_S (default 60), CAPTURE=answer|canvas, PYTHON,
#                                            CANVAS_PATTERN (the canvas frame to wait for, an extended regex)
#
# The app runs with throwaway data and config folders, so it neither reads nor changes your own.
set -euo pipefail
cd "$(dirname "$0")/.."

prompt=${1:-"Morning!"}
wait_s=${WAIT_S:-60}
capture=${CAPTURE:-answer}
python=${PYTHON:-$( [ -x .venv/bin/python ] && echo "$PWD/.venv/bin/python" || command -v python3 )}
session="diffusion-chat-demo-$$"
state=$(mktemp -d)
trap 'tmux kill-session -t "$session" 2>/dev/null || true; rm -rf "$state"' EXIT

tmux new-session -d -s "$session" -x 100 -y 30 \
    env DIFFUSION_CHAT_DATA_DIR="$state/data" DIFFUSION_CHAT_CONFIG_DIR="$state/config" TERM=xterm-256color \
    "$python" -m tui.cli --model tui/demo/diffusion-gemma-demo

screen() { tmux capture-pane -p -t "$session"; }

# Wait until $1 (an extended regex) is on the screen, at most wait_s seconds.
wait_for() {
    local deadline=$((SECONDS + wait_s))
    until screen | grep -Eq "$1"; do
        if ((SECONDS >= deadline)); then
            echo "tmux_demo: timed out waiting for /$1/; the screen was:" >&2
            screen >&2
            exit 1
        fi
        sleep 0.2
    done
}

wait_for "DiffusionGemma │ thinking (on|off) │ ready"
tmux send-keys -t "$session" -l "$prompt"
tmux send-keys -t "$session" Enter
if [ "$capture" = canvas ]; then
    wait_for "${CANVAS_PATTERN:-block [0-9]+/[0-9]+ · step}"
else
    wait_for "tok/s │ [0-9]+ steps, [0-9]+ blocks?"
fi
screen
