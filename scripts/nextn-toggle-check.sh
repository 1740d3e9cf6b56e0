#!/usr/bin/env bash
# The MTP hidden-state check of scripts/upstream-check.sh (see nextn-toggle-check.cpp).
#
#   scripts/nextn-toggle-check.sh TREE LIBDIR MODEL
exec "$(dirname "$0")/upstream-check.sh" nextn-toggle-check "$@"
