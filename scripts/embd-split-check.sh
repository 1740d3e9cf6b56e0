#!/usr/bin/env bash
# The embeddings on/off check of scripts/upstream-check.sh (see embd-split-check.cpp).
#
#   scripts/embd-split-check.sh TREE LIBDIR MODEL
exec "$(dirname "$0")/upstream-check.sh" embd-split-check "$@"
