# shellcheck shell=bash disable=SC1091
source "$stdenv/setup"
genericBuild
