#!/usr/bin/env bash
# The state-restore check of scripts/upstream-check.sh, under the name its records were made with.
#
#   scripts/state-restore-check.sh TREE LIBDIR MODEL [--device]
exec "$(dirname "$0")/upstream-check.sh" state-restore-check "$@"
