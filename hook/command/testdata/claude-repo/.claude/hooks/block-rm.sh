#!/bin/sh
# Refuse recursive forced deletes.
cmd=$(jq -r '.tool_input.command // empty')
if printf '%s\n' "$cmd" | grep -Eq '(^|[;&|[:space:]])rm[[:space:]]+(-[a-zA-Z]*r[a-zA-Z]*f|-[a-zA-Z]*f[a-zA-Z]*r|-r[[:space:]]+-f|-f[[:space:]]+-r)'; then
  echo "rm -rf is not allowed in this repository; delete specific files instead" >&2
  exit 2
fi
exit 0
