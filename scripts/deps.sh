#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deps.sh: installs the Debian packages gpuslice builds with, when missing.
# Called by the Makefile before every build, so a fresh Debian machine needs
# nothing but this repository. Installs only what is absent.
set -euo pipefail
# libh2o-dev exports picohttpparser (serve); its .pc names libuv, hence libuv1-dev.
# gRPC: nghttp2 (HTTP/2), protobuf-c and its compiler; tests/serve/test-grpc.sh
# drives it with Debian's gRPC client (python3-grpcio, python3-protobuf, protoc)
# and nghttp (nghttp2-client, whose h2load bench/grpc.sh also uses).
# tests/nvml-emu/test-nvml-rust-client.sh builds an NVML client offline on Debian's
# Rust crates of NVIDIA's API (nvml-wrapper, nvml-wrapper-sys).
# tests/cluster/test-slurm.sh runs a live Slurm cluster: munge, slurmctld,
# slurmd and the client commands (it fetches contrib's gpu/nvml plugin itself).
# tests/plan/k8s_check.py reads the Kubernetes export with python3-yaml.
# serve tells systemd it is ready through libsystemd's sd_notify (libsystemd-dev).
# `bench plot` writes PNG and PDF through librsvg and cairo (librsvg2-dev, libcairo2-dev).
# tests/serve/test-metrics-labels.sh checks /metrics with promtool (prometheus).
need=(gcc make cmake pkg-config libjansson-dev libyaml-dev libcmocka-dev python3 libh2o-dev libuv1-dev
      libsystemd-dev librsvg2-dev libcairo2-dev
      libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler nghttp2-client
      python3-grpcio python3-protobuf protobuf-compiler python3-yaml prometheus
      cargo rustc librust-nvml-wrapper-dev librust-nvml-wrapper-sys-dev
      munge slurmctld slurmd slurm-client)
[ "${GS_WITH_CLANG:-0}" = 1 ] && need+=(clang libclang-rt-14-dev)
[ "${GS_WITH_TSAN:-0}" = 1 ] && need+=(libtsan2)
# make deb, and the packaging tests: Debian's package tools, lintian, man
# (man -l renders every page); bash-completion and zsh, whose completion
# scripts tests/cli/test-cli-complete.sh loads (it skips a shell that is missing).
[ "${GS_WITH_DEB:-0}" = 1 ] && need+=(debhelper dpkg-dev lintian man-db systemd bash-completion zsh)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "gpuslice: installing Debian packages: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
