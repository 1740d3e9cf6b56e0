#!/usr/bin/env bash
# The LoRA adapter check of scripts/upstream-check.sh (see lora-check.cpp).
#
#   scripts/lora-check.sh TREE LIBDIR MODEL ADAPTER
exec "$(dirname "$0")/upstream-check.sh" lora-check "$@"
