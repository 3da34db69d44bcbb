# PreToolUse hook: append one line per tool call to the session's log directory.
# Uses /bin/sh, cat, grep, head and cut only (the sandbox mounts /usr; there is no jq).
# Read stdin whole first, so the harness never writes into a closed pipe.
input=$(cat)
[ -n "${HEADWATER_LOG_DIR:-}" ] || exit 0
name=$(printf '%s' "$input" | grep -o '"tool_name": *"[^"]*"' | head -n 1 | cut -d '"' -f 4)
printf 'tool-call %s\n' "${name:-unknown}" >> "$HEADWATER_LOG_DIR/hook.log"
exit 0
