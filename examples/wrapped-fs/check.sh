#!/bin/sh
# Reward of wrapped-fs: runs inside the sandbox, in the workspace; prints 1 (solved) or 0.
case "$OPENENV_TASK_ID" in
  greet)   [ "$(cat greeting.txt 2>/dev/null)" = "hello" ] ;;
  rename)  [ -f final.txt ] && [ ! -e draft.txt ] && [ "$(cat final.txt)" = "draft text" ] ;;
  cleanup) [ ! -e junk.tmp ] && [ -f trash/junk.tmp ] && [ -f keep.txt ] ;;
  *)       false ;;
esac && echo 1 || echo 0
